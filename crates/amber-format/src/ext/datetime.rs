//! DATE, TIME, DATETIME, TIMEDELTA and TZINFO (spec 5.16.3), and the `tz` field that TIME,
//! DATETIME and TZINFO share (spec 5.16.2).

use super::blob_reader::BlobReader;
use super::ExtError;
use crate::encode::Sink;
use crate::varint::{varint_len, zigzag};

/// One day in microseconds: a fixed offset lies strictly within it.
const DAY_MICROS: i64 = 86_400_000_000;

/// Longest time-zone key (spec 8.5).
pub const MAX_ZONE_KEY_LEN: usize = 255;

/// Whether `key` is a zoneinfo key a TZINFO may carry: 1 to 255 characters from
/// `A-Za-z0-9_+-/`, with no empty segment (so no leading, trailing or doubled `/`). The rule
/// keeps keys such as `../etc/passwd` away from a host's file-system lookup.
pub fn valid_zone_key(key: &[u8]) -> bool {
    (1..=MAX_ZONE_KEY_LEN).contains(&key.len())
        && key
            .iter()
            .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'+' | b'-' | b'/'))
        && key.split(|&c| c == b'/').all(|segment| !segment.is_empty())
}

/// Days in `month` (1-12) of `year`: February has 29 in years divisible by 4, except those
/// divisible by 100 but not by 400.
pub const fn days_in_month(year: u16, month: u8) -> u8 {
    match month {
        4 | 6 | 9 | 11 => 30,
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        _ => 31,
    }
}

/// The `tz` field (spec 5.16.2): a time zone, or none for a naive value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tz<'a> {
    /// `tzkind` 0: naive (not allowed as a whole TZINFO).
    Naive,
    /// `tzkind` 1: `datetime.timezone.utc`.
    Utc,
    /// `tzkind` 2 or 4: a fixed offset.
    Fixed {
        /// Microseconds east of UTC, strictly within one day.
        offset: i64,
        /// `None`: no name of its own (`tzkind` 2 with `m` = 0); `Some("")`: an explicitly
        /// empty name (`tzkind` 4); otherwise the name (`tzkind` 2).
        name: Option<&'a str>,
    },
    /// `tzkind` 3: a time-zone database key, which [`valid_zone_key`] accepts. Whether the
    /// host's database has it is the host's check.
    Zone(&'a str),
}

impl<'a> Tz<'a> {
    /// Reads the field; `naive_ok` is false for a whole TZINFO.
    pub(crate) fn read(r: &mut BlobReader<'a>, naive_ok: bool) -> Result<Tz<'a>, ExtError> {
        match r.u8("tzkind")? {
            0 if naive_ok => Ok(Tz::Naive),
            0 => Err(r.invalid(format_args!("tzkind 0 (naive) is not allowed here"))),
            1 => Ok(Tz::Utc),
            kind @ (2 | 4) => {
                let offset = r.zigzag("timezone offset")?;
                if offset <= -DAY_MICROS || offset >= DAY_MICROS {
                    return Err(r.invalid(format_args!(
                        "timezone offset {offset} microseconds is not strictly within one day"
                    )));
                }
                let name = if kind == 4 {
                    Some("")
                } else {
                    match r.varint("timezone name length")? {
                        0 => None,
                        n => {
                            let raw = r.take(n, "timezone name")?;
                            Some(std::str::from_utf8(raw).map_err(|_| {
                                r.invalid(format_args!("timezone name is not valid UTF-8"))
                            })?)
                        }
                    }
                };
                Ok(Tz::Fixed { offset, name })
            }
            3 => {
                let n = r.varint("zoneinfo key length")?;
                if !(1..=MAX_ZONE_KEY_LEN as u64).contains(&n) {
                    return Err(r.invalid(format_args!(
                        "zoneinfo key length {n} is out of range 1..{MAX_ZONE_KEY_LEN}"
                    )));
                }
                let key = r.take(n, "zoneinfo key")?;
                match std::str::from_utf8(key) {
                    Ok(key) if valid_zone_key(key.as_bytes()) => Ok(Tz::Zone(key)),
                    _ => Err(r.invalid(format_args!(
                        "zoneinfo key {:?} is not made of A-Za-z0-9_+-/ segments",
                        String::from_utf8_lossy(key)
                    ))),
                }
            }
            kind => Err(r.invalid(format_args!("tzkind {kind} is not defined (0..4)"))),
        }
    }

    pub(crate) fn encoded_len(&self) -> usize {
        1 + match self {
            Tz::Naive | Tz::Utc => 0,
            Tz::Fixed { offset, name } => {
                varint_len(zigzag(*offset))
                    + match name {
                        None => 1,
                        Some("") => 0,
                        Some(name) => varint_len(name.len() as u64) + name.len(),
                    }
            }
            Tz::Zone(key) => varint_len(key.len() as u64) + key.len(),
        }
    }

    pub(crate) fn write<S: Sink>(&self, out: &mut S) {
        match self {
            Tz::Naive => out.push(0),
            Tz::Utc => out.push(1),
            Tz::Fixed {
                offset,
                name: Some(""),
            } => {
                out.push(4);
                out.put_varint(zigzag(*offset));
            }
            Tz::Fixed { offset, name } => {
                out.push(2);
                out.put_varint(zigzag(*offset));
                let name = name.unwrap_or("");
                out.put_varint(name.len() as u64);
                out.extend_from_slice(name.as_bytes());
            }
            Tz::Zone(key) => {
                out.push(3);
                out.put_varint(key.len() as u64);
                out.extend_from_slice(key.as_bytes());
            }
        }
    }
}

/// DATE (spec 5.16.3): `datetime.date`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Date {
    /// 1 to 9999.
    pub year: u16,
    /// 1 to 12.
    pub month: u8,
    /// 1 to the length of the month ([`days_in_month`]).
    pub day: u8,
}

impl Date {
    pub(crate) fn read(r: &mut BlobReader<'_>) -> Result<Date, ExtError> {
        let year = r.varint("year")?;
        let year = r.in_range("year", year, 1, 9999)? as u16;
        let month = r.u8("month")?;
        let month = r.in_range("month", u64::from(month), 1, 12)? as u8;
        let day = r.u8("day")?;
        let last = days_in_month(year, month);
        let day = r.in_range("day", u64::from(day), 1, u64::from(last))? as u8;
        Ok(Date { year, month, day })
    }

    pub(crate) fn encoded_len(&self) -> usize {
        varint_len(u64::from(self.year)) + 2
    }

    pub(crate) fn write<S: Sink>(&self, out: &mut S) {
        out.put_varint(u64::from(self.year));
        out.push(self.month);
        out.push(self.day);
    }
}

/// TIME (spec 5.16.3): `datetime.time`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Time<'a> {
    /// 0 to 23.
    pub hour: u8,
    /// 0 to 59.
    pub minute: u8,
    /// 0 to 59.
    pub second: u8,
    /// 0 to 999,999.
    pub microsecond: u32,
    /// Bit 0 of `flags`, the only bit that may be set.
    pub fold: bool,
    /// The time zone.
    pub tz: Tz<'a>,
}

impl<'a> Time<'a> {
    pub(crate) fn read(r: &mut BlobReader<'a>) -> Result<Time<'a>, ExtError> {
        let hour = r.u8("hour")?;
        let hour = r.in_range("hour", u64::from(hour), 0, 23)? as u8;
        let minute = r.u8("minute")?;
        let minute = r.in_range("minute", u64::from(minute), 0, 59)? as u8;
        let second = r.u8("second")?;
        let second = r.in_range("second", u64::from(second), 0, 59)? as u8;
        let micro = r.varint("microsecond")?;
        let microsecond = r.in_range("microsecond", micro, 0, 999_999)? as u32;
        let flags = r.u8("flags")?;
        if flags & !1 != 0 {
            return Err(r.invalid(format_args!(
                "flags 0x{flags:02X} set bits other than bit 0 (fold)"
            )));
        }
        let tz = Tz::read(r, true)?;
        Ok(Time {
            hour,
            minute,
            second,
            microsecond,
            fold: flags & 1 != 0,
            tz,
        })
    }

    pub(crate) fn encoded_len(&self) -> usize {
        3 + varint_len(u64::from(self.microsecond)) + 1 + self.tz.encoded_len()
    }

    pub(crate) fn write<S: Sink>(&self, out: &mut S) {
        out.push(self.hour);
        out.push(self.minute);
        out.push(self.second);
        out.put_varint(u64::from(self.microsecond));
        out.push(u8::from(self.fold));
        self.tz.write(out);
    }
}

/// DATETIME (spec 5.16.3): `datetime.datetime`, the fields of DATE then those of TIME.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DateTime<'a> {
    /// The date part.
    pub date: Date,
    /// The time part, with the time zone.
    pub time: Time<'a>,
}

impl<'a> DateTime<'a> {
    pub(crate) fn read(r: &mut BlobReader<'a>) -> Result<DateTime<'a>, ExtError> {
        let date = Date::read(r)?;
        let time = Time::read(r)?;
        Ok(DateTime { date, time })
    }

    pub(crate) fn encoded_len(&self) -> usize {
        self.date.encoded_len() + self.time.encoded_len()
    }

    pub(crate) fn write<S: Sink>(&self, out: &mut S) {
        self.date.write(out);
        self.time.write(out);
    }
}

/// TIMEDELTA (spec 5.16.3): `datetime.timedelta` in Python's normalized form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeDelta {
    /// -999,999,999 to 999,999,999.
    pub days: i32,
    /// 0 to 86,399.
    pub seconds: u32,
    /// 0 to 999,999.
    pub microseconds: u32,
}

impl TimeDelta {
    pub(crate) fn read(r: &mut BlobReader<'_>) -> Result<TimeDelta, ExtError> {
        let days = r.zigzag("days")?;
        if !(-999_999_999..=999_999_999).contains(&days) {
            return Err(r.invalid(format_args!(
                "days {days} is out of range -999999999..999999999"
            )));
        }
        let seconds = r.varint("seconds")?;
        let seconds = r.in_range("seconds", seconds, 0, 86_399)? as u32;
        let micros = r.varint("microseconds")?;
        let microseconds = r.in_range("microseconds", micros, 0, 999_999)? as u32;
        Ok(TimeDelta {
            days: days as i32,
            seconds,
            microseconds,
        })
    }

    pub(crate) fn encoded_len(&self) -> usize {
        varint_len(zigzag(i64::from(self.days)))
            + varint_len(u64::from(self.seconds))
            + varint_len(u64::from(self.microseconds))
    }

    pub(crate) fn write<S: Sink>(&self, out: &mut S) {
        out.put_varint(zigzag(i64::from(self.days)));
        out.put_varint(u64::from(self.seconds));
        out.put_varint(u64::from(self.microseconds));
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ExtBlob, ExtCode};
    use super::*;

    fn err(code: ExtCode, blob: &[u8]) -> String {
        ExtBlob::parse(code, blob)
            .expect_err("invalid")
            .message()
            .to_owned()
    }

    #[test]
    fn zone_keys() {
        for good in [
            "UTC",
            "Europe/Berlin",
            "Etc/GMT+5",
            "America/Port-au-Prince",
        ] {
            assert!(valid_zone_key(good.as_bytes()), "{good}");
        }
        for bad in ["", "/etc/passwd", "a//b", "a/", "../x", "a b", "a\0"] {
            assert!(!valid_zone_key(bad.as_bytes()), "{bad:?}");
        }
        assert!(!valid_zone_key("a".repeat(256).as_bytes()));
        assert!(valid_zone_key("a".repeat(255).as_bytes()));
    }

    #[test]
    fn leap_years() {
        assert_eq!(days_in_month(2024, 2), 29);
        assert_eq!(days_in_month(2023, 2), 28);
        assert_eq!(days_in_month(1900, 2), 28);
        assert_eq!(days_in_month(2000, 2), 29);
        assert_eq!(days_in_month(2023, 4), 30);
        assert_eq!(days_in_month(2023, 12), 31);
    }

    #[test]
    fn valid_values_round_trip() {
        let date = Date {
            year: 2024,
            month: 2,
            day: 29,
        };
        let zones = [
            Tz::Naive,
            Tz::Utc,
            Tz::Fixed {
                offset: 7_200_000_000,
                name: None,
            },
            Tz::Fixed {
                offset: -DAY_MICROS + 1,
                name: Some(""),
            },
            Tz::Fixed {
                offset: 0,
                name: Some("Zürich"),
            },
            Tz::Zone("Europe/Berlin"),
        ];
        let mut blobs = vec![
            ExtBlob::Date(date),
            ExtBlob::TimeDelta(TimeDelta {
                days: -999_999_999,
                seconds: 86_399,
                microseconds: 999_999,
            }),
        ];
        for tz in zones {
            let time = Time {
                hour: 23,
                minute: 59,
                second: 59,
                microsecond: 999_999,
                fold: true,
                tz,
            };
            blobs.push(ExtBlob::Time(time));
            blobs.push(ExtBlob::DateTime(DateTime { date, time }));
            if tz != Tz::Naive {
                blobs.push(ExtBlob::TzInfo(tz));
            }
        }
        for blob in blobs {
            let mut bytes = Vec::new();
            blob.write(&mut bytes);
            assert_eq!(bytes.len(), blob.encoded_len(), "{blob:?}");
            assert_eq!(ExtBlob::parse(blob.code(), &bytes), Ok(blob));
        }
        // The spec's example: 2024-05-17.
        assert_eq!(
            ExtBlob::parse(ExtCode::Date, &[0xe8, 0x0f, 0x05, 0x11]),
            Ok(ExtBlob::Date(Date {
                year: 2024,
                month: 5,
                day: 17
            }))
        );
    }

    #[test]
    fn every_rule_is_checked() {
        use ExtCode::{Date as D, DateTime as DT, Time as T, TimeDelta as TD, TzInfo as TZ};
        let cases: &[(ExtCode, &[u8], &str)] = &[
            (
                D,
                &[0xe8, 0x0f, 13, 1],
                "DATE month 13 is out of range 1..12",
            ),
            (D, &[0xe8, 0x0f, 1, 0], "DATE day 0 is out of range 1..31"),
            (D, &[0xe7, 0x0f, 2, 29], "DATE day 29 is out of range 1..28"),
            (D, &[0xec, 0x0e, 2, 29], "DATE day 29 is out of range 1..28"),
            (D, &[0, 1, 1], "DATE year 0 is out of range 1..9999"),
            (
                D,
                &[0x90, 0x4e, 1, 1],
                "DATE year 10000 is out of range 1..9999",
            ),
            (
                D,
                &[1, 1, 1, 0],
                "DATE blob has 1 bytes after its last field",
            ),
            (D, &[], "DATE blob ends before its year"),
            (
                D,
                &[0x81, 0, 1, 1],
                "DATE year varint has a redundant final zero byte",
            ),
            (
                T,
                &[24, 0, 0, 0, 0, 0],
                "TIME hour 24 is out of range 0..23",
            ),
            (
                T,
                &[0, 60, 0, 0, 0, 0],
                "TIME minute 60 is out of range 0..59",
            ),
            (
                T,
                &[0, 0, 60, 0, 0, 0],
                "TIME second 60 is out of range 0..59",
            ),
            (
                T,
                &[0, 0, 0, 0xc0, 0x84, 0x3d, 0, 0],
                "TIME microsecond 1000000 is out of range 0..999999",
            ),
            (
                T,
                &[0, 0, 0, 0, 2, 0],
                "TIME flags 0x02 set bits other than bit 0 (fold)",
            ),
            (
                T,
                &[0, 0, 0, 0, 0, 5],
                "TIME tzkind 5 is not defined (0..4)",
            ),
            (T, &[0, 0, 0, 0, 0], "TIME blob ends before its tzkind"),
            (
                DT,
                &[
                    1, 1, 1, 0, 0, 0, 0, 0, 2, 0x80, 0x80, 0xbb, 0xdd, 0x83, 0x05, 0,
                ],
                "DATETIME timezone offset 86400000000 microseconds is not strictly within one day",
            ),
            (
                DT,
                &[
                    1, 1, 1, 0, 0, 0, 0, 0, 2, 0xff, 0xff, 0xba, 0xdd, 0x83, 0x05, 0,
                ],
                "DATETIME timezone offset -86400000000 microseconds is not strictly within one day",
            ),
            (
                DT,
                &[1, 1, 1, 0, 0, 0, 0, 0, 2, 0, 1, 0xff],
                "DATETIME timezone name is not valid UTF-8",
            ),
            (
                DT,
                &[1, 1, 1, 0, 0, 0, 0, 0, 2, 0, 5, b'A', b'B'],
                "DATETIME timezone name needs 5 bytes but 2 are left",
            ),
            (
                DT,
                &[1, 1, 1, 0, 0, 0, 0, 0, 3, 0],
                "DATETIME zoneinfo key length 0 is out of range 1..255",
            ),
            (
                DT,
                &[1, 1, 1, 0, 0, 0, 0, 0, 3, 4, b'/', b'U', b'T', b'C'],
                "DATETIME zoneinfo key \"/UTC\" is not made of A-Za-z0-9_+-/ segments",
            ),
            (
                TD,
                &[0x80, 0xa8, 0xd6, 0xb9, 0x07, 0, 0],
                "TIMEDELTA days 1000000000 is out of range -999999999..999999999",
            ),
            (
                TD,
                &[0, 0x80, 0xa3, 0x05, 0],
                "TIMEDELTA seconds 86400 is out of range 0..86399",
            ),
            (
                TD,
                &[0, 0, 0xc0, 0x84, 0x3d],
                "TIMEDELTA microseconds 1000000 is out of range 0..999999",
            ),
            (TZ, &[0], "TZINFO tzkind 0 (naive) is not allowed here"),
            (TZ, &[1, 0], "TZINFO blob has 1 bytes after its last field"),
        ];
        for (code, blob, message) in cases {
            assert_eq!(err(*code, blob), *message, "{blob:02x?}");
        }
    }
}
