//! EXT values of the known library types (all codes but NDARRAY and NUMPY_SCALAR).
//!
//! Every blob field is checked here against the layout in the spec before anything is
//! built; a violation, or a Python exception while building (a zoneinfo key that is not
//! found, an ipaddress ValueError), is `invalid_ext`. The stdlib modules are imported
//! lazily, on first need, and nothing a payload names is ever imported.

use std::ffi::CStr;

use amber_format::ext::{array_wire_size, valid_zone_key};
use amber_format::varint::{read_varint, unzigzag, VarintError};
use amber_format::{BuildError, ErrorKind, ExtCode};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use pyo3_ffi as ffi;

use super::PyBuilder;
use crate::object::{Cached, PyObj};

static ZONEINFO: Cached = Cached::new();
static DECIMAL: Cached = Cached::new();
static DECIMAL_CONTEXT: Cached = Cached::new();
static UUID: Cached = Cached::new();
static SAFE_UUID: Cached = Cached::new();
static SAFE_UUID_MEMBERS: [Cached; 3] = [Cached::new(), Cached::new(), Cached::new()];
static NAME_INT: Cached = Cached::new();
static NAME_IS_SAFE: Cached = Cached::new();
static FRACTION: Cached = Cached::new();
static DEQUE: Cached = Cached::new();
static ORDERED_DICT: Cached = Cached::new();
static COUNTER: Cached = Cached::new();
static DEFAULTDICT: Cached = Cached::new();
static ARRAY: Cached = Cached::new();
static PATHS: [Cached; 4] = [Cached::new(), Cached::new(), Cached::new(), Cached::new()];
static PATH_NAMES: [&CStr; 4] = [
    c"PurePosixPath",
    c"PureWindowsPath",
    c"PosixPath",
    c"WindowsPath",
];
/// IPv4 then IPv6 class of each of IP_ADDRESS, IP_NETWORK, IP_INTERFACE.
static IP_CLASSES: [[Cached; 2]; 3] = [
    [Cached::new(), Cached::new()],
    [Cached::new(), Cached::new()],
    [Cached::new(), Cached::new()],
];
static IP_NAMES: [[&CStr; 2]; 3] = [
    [c"IPv4Address", c"IPv6Address"],
    [c"IPv4Network", c"IPv6Network"],
    [c"IPv4Interface", c"IPv6Interface"],
];

/// The builtin types a defaultdict factory may name.
const FACTORIES: [&str; 12] = [
    "list",
    "dict",
    "set",
    "int",
    "float",
    "str",
    "bytes",
    "tuple",
    "frozenset",
    "bool",
    "complex",
    "bytearray",
];

/// An `invalid_ext` error with a sentence for people.
#[cold]
pub(super) fn invalid(detail: String) -> BuildError {
    BuildError::Rejected(ErrorKind::InvalidExt, detail)
}

/// Reads the fields of one blob, in order; every failure names the code and the field.
pub(super) struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
    what: &'static str,
}

impl<'a> Reader<'a> {
    /// A reader over the blob of code `what` (its spec name).
    pub(super) fn new(what: &'static str, data: &'a [u8]) -> Self {
        Reader { data, pos: 0, what }
    }

    /// The code's spec name, for messages.
    pub(super) fn what(&self) -> &'static str {
        self.what
    }

    fn short(&self, field: &str) -> BuildError {
        invalid(format!("{} blob ends before its {field}", self.what))
    }

    /// The next byte, without reading it.
    pub(super) fn peek(&self) -> Option<u8> {
        self.data.get(self.pos).copied()
    }

    /// One byte.
    pub(super) fn u8(&mut self, field: &str) -> Result<u8, BuildError> {
        let b = *self.data.get(self.pos).ok_or_else(|| self.short(field))?;
        self.pos += 1;
        Ok(b)
    }

    /// A minimal LEB128 varint.
    pub(super) fn varint(&mut self, field: &str) -> Result<u64, BuildError> {
        let rest = self.data.get(self.pos..).unwrap_or(&[]);
        match read_varint(rest) {
            Ok((v, used)) => {
                self.pos += used;
                Ok(v)
            }
            Err(VarintError::Truncated) => Err(self.short(field)),
            Err(VarintError::Overlong) => Err(invalid(format!(
                "{} {field} varint has a redundant final zero byte",
                self.what
            ))),
            Err(VarintError::Overflow) => Err(invalid(format!(
                "{} {field} varint is longer than 10 bytes or above 2^64-1",
                self.what
            ))),
        }
    }

    /// A zigzag varint.
    pub(super) fn zigzag(&mut self, field: &str) -> Result<i64, BuildError> {
        self.varint(field).map(unzigzag)
    }

    /// The next `n` bytes.
    pub(super) fn take(&mut self, n: u64, field: &str) -> Result<&'a [u8], BuildError> {
        let slice = usize::try_from(n)
            .ok()
            .and_then(|n| self.pos.checked_add(n))
            .and_then(|end| self.data.get(self.pos..end))
            .ok_or_else(|| {
                invalid(format!(
                    "{} {field} needs {n} bytes but {} are left",
                    self.what,
                    self.data.len().saturating_sub(self.pos)
                ))
            })?;
        self.pos += slice.len();
        Ok(slice)
    }

    /// Everything left.
    pub(super) fn rest(&mut self) -> &'a [u8] {
        let rest = self.data.get(self.pos..).unwrap_or(&[]);
        self.pos = self.data.len();
        rest
    }

    /// Fails if bytes are left after the last field.
    pub(super) fn end(&self) -> Result<(), BuildError> {
        match self.data.len().saturating_sub(self.pos) {
            0 => Ok(()),
            n => Err(invalid(format!(
                "{} blob has {n} bytes after its last field",
                self.what
            ))),
        }
    }
}

/// Checks an unsigned field against an inclusive range.
fn in_range(what: &str, field: &str, v: u64, lo: u64, hi: u64) -> Result<u64, BuildError> {
    if (lo..=hi).contains(&v) {
        Ok(v)
    } else {
        Err(invalid(format!(
            "{what} {field} {v} is out of range {lo}..{hi}"
        )))
    }
}

fn days_in_month(year: u64, month: u64) -> u64 {
    match month {
        4 | 6 | 9 | 11 => 30,
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        _ => 31,
    }
}

/// A digit string: ASCII `0`-`9` and no leading zero unless it is exactly "0".
fn check_digits(what: &str, field: &str, digits: &[u8]) -> Result<(), BuildError> {
    if let Some(bad) = digits.iter().find(|c| !c.is_ascii_digit()) {
        return Err(invalid(format!(
            "{what} {field} holds byte 0x{bad:02X}, not a digit"
        )));
    }
    if digits.len() > 1 && digits.first() == Some(&b'0') {
        return Err(invalid(format!("{what} {field} has a leading zero")));
    }
    Ok(())
}

impl PyBuilder<'_, '_> {
    /// The exception just raised while building an EXT value: `invalid_ext` with its text,
    /// except for MemoryError and non-Exception errors (KeyboardInterrupt), which propagate.
    #[cold]
    pub(super) fn python_rejected(&mut self, what: &str) -> BuildError {
        let py = self.py;
        let Some(err) = PyErr::take(py) else {
            return invalid(format!("{what} could not be built"));
        };
        if err.is_instance_of::<pyo3::exceptions::PyException>(py)
            && !err.is_instance_of::<pyo3::exceptions::PyMemoryError>(py)
        {
            let ty = err
                .get_type(py)
                .name()
                .map(|n| n.to_string())
                .unwrap_or_default();
            invalid(format!("{what}: {ty}: {}", err.value(py)))
        } else {
            err.restore(py);
            self.host_failure()
        }
    }

    /// Owns a C-API result; NULL becomes [`PyBuilder::python_rejected`].
    pub(super) fn made(
        &mut self,
        ptr: *mut ffi::PyObject,
        what: &str,
    ) -> Result<PyObj, BuildError> {
        PyObj::from_owned(ptr).ok_or_else(|| self.python_rejected(what))
    }

    /// `module.attr`, importing the module on first need (borrowed, kept forever).
    pub(super) fn lib(
        &mut self,
        slot: &'static Cached,
        module: &CStr,
        attr: &CStr,
    ) -> Result<*mut ffi::PyObject, BuildError> {
        let ptr = slot.imported_attr(module, attr);
        if ptr.is_null() {
            return Err(self.python_rejected(&format!(
                "importing {}.{}",
                module.to_string_lossy(),
                attr.to_string_lossy()
            )));
        }
        Ok(ptr)
    }

    /// `callable(*args)`.
    pub(super) fn call(
        &mut self,
        callable: *mut ffi::PyObject,
        args: &[*mut ffi::PyObject],
        what: &str,
    ) -> Result<PyObj, BuildError> {
        // SAFETY: callable and every arg are live objects the caller holds; vectorcall
        // borrows them for the call.
        let ptr = unsafe {
            ffi::PyObject_Vectorcall(callable, args.as_ptr(), args.len(), std::ptr::null_mut())
        };
        self.made(ptr, what)
    }

    /// `obj.name(*args)`.
    fn call_method(
        &mut self,
        obj: *mut ffi::PyObject,
        name: &CStr,
        args: &[*mut ffi::PyObject],
        what: &str,
    ) -> Result<PyObj, BuildError> {
        // SAFETY: obj is live; the name is NUL-terminated.
        let method = unsafe { ffi::PyObject_GetAttrString(obj, name.as_ptr()) };
        let method = self.made(method, what)?;
        self.call(method.as_ptr(), args, what)
    }

    /// A str from strict UTF-8 (`invalid_ext` otherwise).
    fn text(&mut self, utf8: &[u8], what: &str, errors: &CStr) -> Result<PyObj, BuildError> {
        // SAFETY: decodes a valid slice; CPython checks the bytes and copies them.
        let ptr = unsafe {
            ffi::PyUnicode_DecodeUTF8(
                utf8.as_ptr().cast(),
                utf8.len() as ffi::Py_ssize_t,
                errors.as_ptr(),
            )
        };
        if ptr.is_null() {
            // SAFETY: discarding the UnicodeDecodeError (or MemoryError, rare) just raised.
            unsafe { ffi::PyErr_Clear() };
            return Err(invalid(format!("{what} is not valid UTF-8")));
        }
        self.made(ptr, what)
    }

    fn bytes_obj(&mut self, b: &[u8], what: &str) -> Result<PyObj, BuildError> {
        // SAFETY: copies b.len() bytes from a valid slice.
        let ptr = unsafe {
            ffi::PyBytes_FromStringAndSize(b.as_ptr().cast(), b.len() as ffi::Py_ssize_t)
        };
        self.made(ptr, what)
    }

    fn int_obj(&mut self, v: i64, what: &str) -> Result<PyObj, BuildError> {
        // SAFETY: plain constructor.
        let ptr = unsafe { ffi::PyLong_FromLongLong(v) };
        self.made(ptr, what)
    }

    /// The datetime C-API, importing `datetime` on first need.
    fn datetime_api(&mut self) -> Result<&'static ffi::PyDateTime_CAPI, BuildError> {
        // SAFETY: reads (and on first use fills) pyo3-ffi's pointer to the capsule's static
        // struct, which lives as long as the interpreter; GIL held.
        let api = unsafe {
            if ffi::PyDateTimeAPI().is_null() {
                ffi::PyDateTime_IMPORT();
            }
            ffi::PyDateTimeAPI().as_ref()
        };
        match api {
            Some(api) => Ok(api),
            None => Err(self.python_rejected("importing datetime")),
        }
    }

    pub(super) fn known_blob(&mut self, code: ExtCode, blob: &[u8]) -> Result<PyObj, BuildError> {
        let mut r = Reader::new(code.spec_name(), blob);
        match code {
            ExtCode::Date => self.date(&mut r),
            ExtCode::Time => self.time(&mut r),
            ExtCode::DateTime => self.datetime(&mut r),
            ExtCode::TimeDelta => self.timedelta(&mut r),
            ExtCode::TzInfo => {
                let tz = self.tz(&mut r, false)?;
                r.end()?;
                tz.ok_or_else(|| invalid(String::from("TZINFO tzkind 0 (naive) is not allowed")))
            }
            ExtCode::Decimal => self.decimal(&mut r),
            ExtCode::Uuid => self.uuid(blob),
            ExtCode::Array => self.array(&mut r),
            ExtCode::Path => self.path(&mut r),
            ExtCode::IpAddress => self.ip(&mut r, 0),
            ExtCode::IpNetwork => self.ip(&mut r, 1),
            ExtCode::IpInterface => self.ip(&mut r, 2),
            ExtCode::OutOfBand => self.out_of_band(blob),
            _ => Err(invalid(format!("{} is not a blob code", code.spec_name()))),
        }
    }

    /// year, month, day (DATE and the start of DATETIME).
    fn ymd(r: &mut Reader<'_>) -> Result<(i32, i32, i32), BuildError> {
        let what = r.what();
        let year = in_range(what, "year", r.varint("year")?, 1, 9999)?;
        let month = in_range(what, "month", u64::from(r.u8("month")?), 1, 12)?;
        let day = in_range(
            what,
            "day",
            u64::from(r.u8("day")?),
            1,
            days_in_month(year, month),
        )?;
        Ok((year as i32, month as i32, day as i32))
    }

    /// hour, minute, second, microsecond, fold (TIME and the middle of DATETIME).
    fn hmsf(r: &mut Reader<'_>) -> Result<[i32; 5], BuildError> {
        let what = r.what();
        let hour = in_range(what, "hour", u64::from(r.u8("hour")?), 0, 23)?;
        let minute = in_range(what, "minute", u64::from(r.u8("minute")?), 0, 59)?;
        let second = in_range(what, "second", u64::from(r.u8("second")?), 0, 59)?;
        let micro = in_range(what, "microsecond", r.varint("microsecond")?, 0, 999_999)?;
        let flags = r.u8("flags")?;
        if flags & !1 != 0 {
            return Err(invalid(format!(
                "{what} flags 0x{flags:02X} set bits other than bit 0 (fold)"
            )));
        }
        Ok([
            hour as i32,
            minute as i32,
            second as i32,
            micro as i32,
            i32::from(flags & 1),
        ])
    }

    fn date(&mut self, r: &mut Reader<'_>) -> Result<PyObj, BuildError> {
        let (y, m, d) = Self::ymd(r)?;
        r.end()?;
        let api = self.datetime_api()?;
        // SAFETY: the C-API constructor with checked fields; NULL means an exception.
        let ptr = unsafe { (api.Date_FromDate)(y, m, d, api.DateType) };
        self.made(ptr, "DATE")
    }

    fn time(&mut self, r: &mut Reader<'_>) -> Result<PyObj, BuildError> {
        let [h, mi, s, us, fold] = Self::hmsf(r)?;
        let tz = self.tz(r, true)?;
        r.end()?;
        let api = self.datetime_api()?;
        // SAFETY: None is always live.
        let tz_ptr = tz.as_ref().map_or(unsafe { ffi::Py_None() }, PyObj::as_ptr);
        // SAFETY: the C-API constructor with checked fields and a live tzinfo (or None);
        // NULL means an exception.
        let ptr = unsafe { (api.Time_FromTimeAndFold)(h, mi, s, us, tz_ptr, fold, api.TimeType) };
        self.made(ptr, "TIME")
    }

    fn datetime(&mut self, r: &mut Reader<'_>) -> Result<PyObj, BuildError> {
        let (y, mo, d) = Self::ymd(r)?;
        let [h, mi, s, us, fold] = Self::hmsf(r)?;
        let tz = self.tz(r, true)?;
        r.end()?;
        let api = self.datetime_api()?;
        // SAFETY: None is always live.
        let tz_ptr = tz.as_ref().map_or(unsafe { ffi::Py_None() }, PyObj::as_ptr);
        // SAFETY: the C-API constructor with checked fields and a live tzinfo (or None);
        // NULL means an exception.
        let ptr = unsafe {
            (api.DateTime_FromDateAndTimeAndFold)(
                y,
                mo,
                d,
                h,
                mi,
                s,
                us,
                tz_ptr,
                fold,
                api.DateTimeType,
            )
        };
        self.made(ptr, "DATETIME")
    }

    fn timedelta(&mut self, r: &mut Reader<'_>) -> Result<PyObj, BuildError> {
        let days = r.zigzag("days")?;
        if !(-999_999_999..=999_999_999).contains(&days) {
            return Err(invalid(format!(
                "TIMEDELTA days {days} is out of range -999999999..999999999"
            )));
        }
        let seconds = in_range("TIMEDELTA", "seconds", r.varint("seconds")?, 0, 86_399)?;
        let micros = in_range(
            "TIMEDELTA",
            "microseconds",
            r.varint("microseconds")?,
            0,
            999_999,
        )?;
        r.end()?;
        self.delta(days as i32, seconds as i32, micros as i32, "TIMEDELTA")
    }

    fn delta(
        &mut self,
        days: i32,
        seconds: i32,
        micros: i32,
        what: &str,
    ) -> Result<PyObj, BuildError> {
        let api = self.datetime_api()?;
        // SAFETY: the C-API constructor with in-range fields; NULL means an exception.
        let ptr = unsafe { (api.Delta_FromDelta)(days, seconds, micros, 1, api.DeltaType) };
        self.made(ptr, what)
    }

    /// The `tz` field: `None` for a naive value (only if `naive_ok`).
    fn tz(&mut self, r: &mut Reader<'_>, naive_ok: bool) -> Result<Option<PyObj>, BuildError> {
        let what = r.what();
        match r.u8("tzkind")? {
            0 if naive_ok => Ok(None),
            1 => {
                let api = self.datetime_api()?;
                // SAFETY: timezone.utc is a live static object of the datetime module.
                Ok(Some(unsafe {
                    PyObj::from_borrowed(std::ptr::NonNull::new_unchecked(api.TimeZone_UTC))
                }))
            }
            kind @ (2 | 4) => {
                const DAY: i64 = 86_400_000_000;
                let offset = r.zigzag("timezone offset")?;
                if offset <= -DAY || offset >= DAY {
                    return Err(invalid(format!(
                        "{what} timezone offset {offset} microseconds is not strictly within one day"
                    )));
                }
                let name = if kind == 4 {
                    Some(self.text(b"", &format!("{what} timezone name"), c"strict")?)
                } else {
                    match r.varint("timezone name length")? {
                        0 => None,
                        name_len => {
                            let raw = r.take(name_len, "timezone name")?;
                            Some(self.text(raw, &format!("{what} timezone name"), c"strict")?)
                        }
                    }
                };
                let days = offset.div_euclid(DAY);
                let rest = offset.rem_euclid(DAY);
                let delta = self.delta(
                    days as i32,
                    (rest / 1_000_000) as i32,
                    (rest % 1_000_000) as i32,
                    what,
                )?;
                let api = self.datetime_api()?;
                let name_ptr = name.as_ref().map_or(std::ptr::null_mut(), PyObj::as_ptr);
                // SAFETY: the C-API constructor with a live timedelta and a live str (or
                // NULL for no name); NULL means an exception.
                let ptr = unsafe { (api.TimeZone_FromTimeZone)(delta.as_ptr(), name_ptr) };
                self.made(ptr, &format!("{what} timezone")).map(Some)
            }
            3 => {
                let n = r.varint("zoneinfo key length")?;
                if !(1..=255).contains(&n) {
                    return Err(invalid(format!(
                        "{what} zoneinfo key length {n} is out of range 1..255"
                    )));
                }
                let key = r.take(n, "zoneinfo key")?;
                if !valid_zone_key(key) {
                    return Err(invalid(format!(
                        "{what} zoneinfo key {:?} is not made of A-Za-z0-9_+-/ segments",
                        String::from_utf8_lossy(key)
                    )));
                }
                let key = self.text(key, "zoneinfo key", c"strict")?;
                let zoneinfo = self.lib(&ZONEINFO, c"zoneinfo", c"ZoneInfo")?;
                self.call(zoneinfo, &[key.as_ptr()], &format!("{what} zoneinfo key"))
                    .map(Some)
            }
            0 => Err(invalid(format!(
                "{what} tzkind 0 (naive) is not allowed here"
            ))),
            kind => Err(invalid(format!(
                "{what} tzkind {kind} is not defined (0..4)"
            ))),
        }
    }

    fn decimal(&mut self, r: &mut Reader<'_>) -> Result<PyObj, BuildError> {
        let form = r.u8("form")?;
        if form & !0b111 != 0 {
            return Err(invalid(format!(
                "DECIMAL form 0x{form:02X} sets bits other than 0-2"
            )));
        }
        let sign = if form & 1 != 0 { "-" } else { "" };
        let text = match form >> 1 {
            0 => {
                let exponent = r.zigzag("exponent")?;
                let digits = r.rest();
                if digits.is_empty() {
                    return Err(invalid(String::from("DECIMAL coefficient has no digits")));
                }
                check_digits("DECIMAL", "coefficient", digits)?;
                let digits = std::str::from_utf8(digits).unwrap_or("0");
                format!("{sign}{digits}E{exponent}")
            }
            1 => {
                r.end()?;
                format!("{sign}Infinity")
            }
            kind => {
                let payload = r.rest();
                check_digits("DECIMAL", "NaN payload", payload)?;
                if payload == b"0" {
                    return Err(invalid(String::from(
                        "DECIMAL NaN payload has a leading zero",
                    )));
                }
                let payload = std::str::from_utf8(payload).unwrap_or("");
                let nan = if kind == 2 { "NaN" } else { "sNaN" };
                format!("{sign}{nan}{payload}")
            }
        };
        let decimal = self.lib(&DECIMAL, c"decimal", c"Decimal")?;
        let py = self.py;
        // A private context that traps InvalidOperation: an exponent out of Decimal's range
        // raises instead of quietly giving NaN.
        let context = DECIMAL_CONTEXT.get_or_init(|| {
            let made = (|| -> PyResult<Py<PyAny>> {
                let module = py.import("decimal")?;
                let kwargs = PyDict::new(py);
                kwargs.set_item(
                    "traps",
                    PyList::new(py, [module.getattr("InvalidOperation")?])?,
                )?;
                Ok(module.getattr("Context")?.call((), Some(&kwargs))?.unbind())
            })();
            match made {
                Ok(context) => context.into_ptr(),
                Err(e) => {
                    e.restore(py);
                    std::ptr::null_mut()
                }
            }
        });
        if context.is_null() {
            return Err(self.python_rejected("making a decimal context"));
        }
        let text = self.text(text.as_bytes(), "DECIMAL", c"strict")?;
        self.call(decimal, &[text.as_ptr(), context], "DECIMAL")
    }

    fn uuid(&mut self, blob: &[u8]) -> Result<PyObj, BuildError> {
        let (bytes, safe) = match blob {
            [bytes @ .., safe] if blob.len() == 17 => (bytes, Some(*safe)),
            _ if blob.len() == 16 => (blob, None),
            _ => {
                return Err(invalid(format!(
                    "UUID blob has {} bytes, not 16 or 17",
                    blob.len()
                )))
            }
        };
        let member = match safe {
            None => 2,
            Some(0) => 0,
            Some(1) => 1,
            Some(b) => {
                return Err(invalid(format!(
                    "UUID is_safe byte {b} is not 0 (safe) or 1 (unsafe)"
                )))
            }
        };
        let value = u128::from_be_bytes(bytes.try_into().unwrap_or([0; 16]));
        let uuid_type = self.lib(&UUID, c"uuid", c"UUID")?;
        let names = [c"safe", c"unsafe", c"unknown"];
        let slot = SAFE_UUID_MEMBERS
            .get(member)
            .unwrap_or(&SAFE_UUID_MEMBERS[2]);
        let is_safe = slot.get_or_init(|| {
            let safe_uuid = SAFE_UUID.imported_attr(c"uuid", c"SafeUUID");
            if safe_uuid.is_null() {
                return safe_uuid;
            }
            let name = names.get(member).copied().unwrap_or(c"unknown");
            // SAFETY: safe_uuid is a live class; the name is NUL-terminated.
            unsafe { ffi::PyObject_GetAttrString(safe_uuid, name.as_ptr()) }
        });
        if is_safe.is_null() {
            return Err(self.python_rejected("UUID is_safe"));
        }
        let py = self.py;
        let int = match value.into_pyobject(py) {
            Ok(int) => int,
            Err(never) => match never {},
        };
        // SAFETY: a new reference moves from the Bound into the PyObj.
        let int = unsafe { PyObj::from_borrowed(std::ptr::NonNull::new_unchecked(int.as_ptr())) };
        let names = [(&NAME_INT, c"int"), (&NAME_IS_SAFE, c"is_safe")];
        let mut interned = [std::ptr::null_mut(); 2];
        for ((slot, name), out) in names.iter().zip(interned.iter_mut()) {
            // SAFETY: interning a NUL-terminated ASCII name; NULL means an exception.
            *out = slot.get_or_init(|| unsafe { ffi::PyUnicode_InternFromString(name.as_ptr()) });
            if out.is_null() {
                return Err(self.python_rejected("UUID"));
            }
        }
        // `object.__new__(UUID)` then the two slots, as UUID.__setstate__ does: UUID's own
        // __init__ and __setattr__ (which refuses) are skipped.
        // SAFETY: PyBaseObject_Type is the interpreter's static `object` type.
        let object_new = unsafe { ffi::PyBaseObject_Type.tp_new };
        let Some(object_new) = object_new else {
            return Err(invalid(String::from("object has no tp_new")));
        };
        // SAFETY: plain constructor.
        let empty = unsafe { ffi::PyTuple_New(0) };
        let empty = self.made(empty, "UUID")?;
        // SAFETY: uuid_type is a live class whose instances object.__new__ can make (a
        // plain class with __slots__); the args tuple is empty; NULL means an exception.
        let obj = unsafe { object_new(uuid_type.cast(), empty.as_ptr(), std::ptr::null_mut()) };
        let obj = self.made(obj, "UUID")?;
        for (name, value) in interned.iter().zip([int.as_ptr(), is_safe]) {
            // SAFETY: obj is a fresh UUID; the slot descriptors take their own references.
            if unsafe { ffi::PyObject_GenericSetAttr(obj.as_ptr(), *name, value) } < 0 {
                return Err(self.python_rejected("UUID"));
            }
        }
        Ok(obj)
    }

    fn array(&mut self, r: &mut Reader<'_>) -> Result<PyObj, BuildError> {
        let typecode = r.u8("typecode")?;
        let Some(wire) = array_wire_size(typecode) else {
            return Err(invalid(format!(
                "ARRAY typecode 0x{typecode:02X} is not one of b B u w h H i I l L q Q f d"
            )));
        };
        let data = r.rest();
        if data.len() % wire != 0 {
            return Err(invalid(format!(
                "ARRAY data of {} bytes is not a multiple of the {wire}-byte items of typecode '{}'",
                data.len(),
                typecode as char
            )));
        }
        let array = self.empty_array("ARRAY", typecode)?;
        if !data.is_empty() {
            let bytes = self.bytes_obj(data, "ARRAY")?;
            self.call_method(array.as_ptr(), c"frombytes", &[bytes.as_ptr()], "ARRAY")?;
            if cfg!(target_endian = "big") && wire > 1 {
                self.call_method(array.as_ptr(), c"byteswap", &[], "ARRAY")?;
            }
        }
        Ok(array)
    }

    /// An empty `array.array` of a typecode the format defines, if the host's items have the
    /// wire size (`invalid_ext` otherwise); `what` names the value in messages.
    pub(super) fn empty_array(&mut self, what: &str, typecode: u8) -> Result<PyObj, BuildError> {
        let wire = array_wire_size(typecode).unwrap_or(0);
        let array_type = self.lib(&ARRAY, c"array", c"array")?;
        let code = self.text(&[typecode], "ARRAY typecode", c"strict")?;
        let array = self.call(array_type, &[code.as_ptr()], what)?;
        // SAFETY: array is a live array.array; NULL means an exception.
        let size = unsafe { ffi::PyObject_GetAttrString(array.as_ptr(), c"itemsize".as_ptr()) };
        let size = self.made(size, what)?;
        // SAFETY: itemsize is an int; -1 with an error on overflow.
        let size = unsafe { ffi::PyLong_AsSsize_t(size.as_ptr()) };
        if size != wire as ffi::Py_ssize_t {
            // SAFETY: clears a possible conversion error.
            unsafe { ffi::PyErr_Clear() };
            return Err(invalid(format!(
                "{what} typecode '{}' has {size}-byte items on this platform, not {wire}",
                typecode as char
            )));
        }
        Ok(array)
    }

    /// Appends the little-endian items held by `buffer` (a buffer-protocol object) to an
    /// array made by [`PyBuilder::empty_array`]: one copy.
    pub(super) fn fill_array(
        &mut self,
        array: &PyObj,
        buffer: &PyObj,
        typecode: u8,
    ) -> Result<(), BuildError> {
        const WHAT: &str = "OUT_OF_BAND array";
        self.call_method(array.as_ptr(), c"frombytes", &[buffer.as_ptr()], WHAT)?;
        if cfg!(target_endian = "big") && array_wire_size(typecode).unwrap_or(1) > 1 {
            self.call_method(array.as_ptr(), c"byteswap", &[], WHAT)?;
        }
        Ok(())
    }

    fn path(&mut self, r: &mut Reader<'_>) -> Result<PyObj, BuildError> {
        let flavour = r.u8("flavour")?;
        let (Some(slot), Some(name)) = (
            PATHS.get(usize::from(flavour)),
            PATH_NAMES.get(usize::from(flavour)),
        ) else {
            return Err(invalid(format!(
                "PATH flavour {flavour} is not defined (0..3)"
            )));
        };
        let text = self.text(r.rest(), "PATH string", c"surrogatepass")?;
        let class = self.lib(slot, c"pathlib", name)?;
        self.call(
            class,
            &[text.as_ptr()],
            &format!("PATH {}", name.to_string_lossy()),
        )
    }

    /// IP_ADDRESS (`which` 0), IP_NETWORK (1) or IP_INTERFACE (2).
    fn ip(&mut self, r: &mut Reader<'_>, which: usize) -> Result<PyObj, BuildError> {
        let what = r.what();
        let prefix = if which == 0 {
            None
        } else {
            Some(r.u8("prefix length")?)
        };
        let addr = r.rest();
        let (v6, packed, scope) = match addr.len() {
            4 => (false, addr, None),
            16.. => {
                let (packed, scope) = addr.split_at(16);
                (true, packed, (!scope.is_empty()).then_some(scope))
            }
            n => {
                return Err(invalid(format!(
                    "{what} address has {n} bytes, not 4 (IPv4) or 16 (IPv6, then a scope id)"
                )))
            }
        };
        if let Some(prefix) = prefix {
            let max = if v6 { 128 } else { 32 };
            if prefix > max {
                return Err(invalid(format!(
                    "{what} prefix length {prefix} is above {max}"
                )));
            }
        }
        let (Some(slot), Some(name)) = (
            IP_CLASSES.get(which).and_then(|c| c.get(usize::from(v6))),
            IP_NAMES.get(which).and_then(|c| c.get(usize::from(v6))),
        ) else {
            return Err(invalid(format!("{what} is not an ipaddress code")));
        };
        let class = self.lib(slot, c"ipaddress", name)?;
        let bytes = self.bytes_obj(packed, what)?;
        let Some(scope) = scope else {
            let arg = match prefix {
                None => bytes,
                Some(prefix) => {
                    let prefix = self.int_obj(i64::from(prefix), what)?;
                    // SAFETY: packs two live objects into a new tuple (own references).
                    let pair = unsafe { ffi::PyTuple_Pack(2, bytes.as_ptr(), prefix.as_ptr()) };
                    self.made(pair, what)?
                }
            };
            return self.call(class, &[arg.as_ptr()], what);
        };
        let scope = match std::str::from_utf8(scope) {
            Ok(s) if !s.contains(['%', '/']) => s,
            _ => {
                return Err(invalid(format!(
                    "{what} IPv6 scope id is not UTF-8 without '%' and '/'"
                )))
            }
        };
        // The scope can only be given in text: "addr%scope[/prefix]".
        let addr_class = self.lib(&IP_CLASSES[0][1], c"ipaddress", c"IPv6Address")?;
        let plain = self.call(addr_class, &[bytes.as_ptr()], what)?;
        // SAFETY: str() of a live object; NULL means an exception.
        let plain = unsafe { ffi::PyObject_Str(plain.as_ptr()) };
        let plain = self.made(plain, what)?;
        let py = self.py;
        // SAFETY: plain is a str we hold for this borrow.
        let plain: String = unsafe { Bound::from_borrowed_ptr(py, plain.as_ptr()) }
            .extract()
            .unwrap_or_default();
        let text = match prefix {
            None => format!("{plain}%{scope}"),
            Some(prefix) => format!("{plain}%{scope}/{prefix}"),
        };
        let text = self.text(text.as_bytes(), what, c"strict")?;
        self.call(class, &[text.as_ptr()], what)
    }

    pub(super) fn known_begin(&mut self, code: ExtCode) -> Result<PyObj, BuildError> {
        let class = match code {
            ExtCode::Deque => self.lib(&DEQUE, c"collections", c"deque")?,
            ExtCode::OrderedDict => self.lib(&ORDERED_DICT, c"collections", c"OrderedDict")?,
            ExtCode::Counter => self.lib(&COUNTER, c"collections", c"Counter")?,
            ExtCode::DefaultDict => self.lib(&DEFAULTDICT, c"collections", c"defaultdict")?,
            _ => {
                return Err(invalid(format!(
                    "{} is not a create-first code",
                    code.spec_name()
                )))
            }
        };
        self.call(class, &[], code.spec_name())
    }

    pub(super) fn known_finish(
        &mut self,
        code: ExtCode,
        obj: &PyObj,
        values: Vec<PyObj>,
    ) -> Result<(), BuildError> {
        let what = code.spec_name();
        match (code, values.as_slice()) {
            (ExtCode::Deque, [maxlen, items]) => {
                // SAFETY: type checks on live objects.
                let (is_none, is_int, is_list) = unsafe {
                    (
                        maxlen.as_ptr() == ffi::Py_None(),
                        ffi::PyLong_CheckExact(maxlen.as_ptr()) != 0,
                        ffi::PyList_CheckExact(items.as_ptr()) != 0,
                    )
                };
                if !is_list {
                    return Err(invalid(String::from("DEQUE items are not a list")));
                }
                if !is_none {
                    let limit = if is_int {
                        // SAFETY: maxlen is an exact int; -1 with an error on overflow.
                        unsafe { ffi::PyLong_AsSsize_t(maxlen.as_ptr()) }
                    } else {
                        -1
                    };
                    if limit < 0 {
                        // SAFETY: clears a possible OverflowError.
                        unsafe { ffi::PyErr_Clear() };
                        return Err(invalid(String::from(
                            "DEQUE maxlen is not None or an int in 0..2^63",
                        )));
                    }
                }
                // deque.__init__(iterable, maxlen) sets maxlen and fills the deque that may
                // already be referred to (keeping the last maxlen items, as extend does).
                self.call_method(
                    obj.as_ptr(),
                    c"__init__",
                    &[items.as_ptr(), maxlen.as_ptr()],
                    what,
                )?;
                Ok(())
            }
            (ExtCode::OrderedDict, [items]) => {
                self.check_dict(items, what)?;
                // OrderedDict.update keeps its own order bookkeeping (a dict-level merge
                // would bypass it).
                self.call_method(obj.as_ptr(), c"update", &[items.as_ptr()], what)?;
                Ok(())
            }
            (ExtCode::Counter, [items]) => {
                self.check_dict(items, what)?;
                self.merge(obj, items, what)
            }
            (ExtCode::DefaultDict, [factory, items]) => {
                self.check_dict(items, what)?;
                let factory = self.factory(factory)?;
                // SAFETY: obj is a defaultdict; the attribute takes its own reference.
                if unsafe {
                    ffi::PyObject_SetAttrString(obj.as_ptr(), c"default_factory".as_ptr(), factory)
                } < 0
                {
                    return Err(self.python_rejected(what));
                }
                self.merge(obj, items, what)
            }
            _ => Err(invalid(format!("{what} got {} values", values.len()))),
        }
    }

    fn check_dict(&self, items: &PyObj, what: &str) -> Result<(), BuildError> {
        // SAFETY: type check on a live object.
        if unsafe { ffi::PyDict_CheckExact(items.as_ptr()) } == 0 {
            return Err(invalid(format!("{what} items are not a dict")));
        }
        Ok(())
    }

    /// `dict.update(obj, items)` for the dict subclasses that keep nothing beside the dict.
    fn merge(&mut self, obj: &PyObj, items: &PyObj, what: &str) -> Result<(), BuildError> {
        // SAFETY: obj is a dict subclass instance and items an exact dict, both live.
        if unsafe { ffi::PyDict_Merge(obj.as_ptr(), items.as_ptr(), 1) } < 0 {
            return Err(self.python_rejected(what));
        }
        Ok(())
    }

    /// The factory named by a DEFAULTDICT (borrowed builtin type, or None).
    fn factory(&mut self, factory: &PyObj) -> Result<*mut ffi::PyObject, BuildError> {
        let ptr = factory.as_ptr();
        // SAFETY: comparing with the None singleton.
        if ptr == unsafe { ffi::Py_None() } {
            return Ok(ptr);
        }
        let py = self.py;
        // SAFETY: ptr is a live object borrowed for this call.
        let name: Option<String> = unsafe { Bound::from_borrowed_ptr(py, ptr) }
            .cast::<pyo3::types::PyString>()
            .ok()
            .and_then(|s| s.to_str().ok().map(str::to_owned));
        let ty: *mut ffi::PyTypeObject = match name.as_deref() {
            Some("list") => &raw mut ffi::PyList_Type,
            Some("dict") => &raw mut ffi::PyDict_Type,
            Some("set") => &raw mut ffi::PySet_Type,
            Some("int") => &raw mut ffi::PyLong_Type,
            Some("float") => &raw mut ffi::PyFloat_Type,
            Some("str") => &raw mut ffi::PyUnicode_Type,
            Some("bytes") => &raw mut ffi::PyBytes_Type,
            Some("tuple") => &raw mut ffi::PyTuple_Type,
            Some("frozenset") => &raw mut ffi::PyFrozenSet_Type,
            Some("bool") => &raw mut ffi::PyBool_Type,
            Some("complex") => &raw mut ffi::PyComplex_Type,
            Some("bytearray") => &raw mut ffi::PyByteArray_Type,
            _ => {
                let shown =
                    name.map_or_else(|| String::from("a non-str value"), |n| format!("{n:?}"));
                return Err(invalid(format!(
                    "DEFAULTDICT factory {shown} is not None or one of {}",
                    FACTORIES.join(", ")
                )));
            }
        };
        Ok(ty.cast())
    }

    pub(super) fn known_build(
        &mut self,
        code: ExtCode,
        values: Vec<PyObj>,
    ) -> Result<PyObj, BuildError> {
        let what = code.spec_name();
        match (code, values.as_slice()) {
            (ExtCode::Fraction, [n, d]) => {
                self.bounded_int(n, "FRACTION numerator")?;
                let sign = self.bounded_int(d, "FRACTION denominator")?;
                if sign <= 0 {
                    return Err(invalid(String::from(
                        "FRACTION denominator is not positive",
                    )));
                }
                let fraction = self.lib(&FRACTION, c"fractions", c"Fraction")?;
                self.call(fraction, &[n.as_ptr(), d.as_ptr()], what)
            }
            (ExtCode::Range, [start, stop, step]) => {
                for (v, field) in [(start, "start"), (stop, "stop"), (step, "step")] {
                    // SAFETY: type check on a live object.
                    if unsafe { ffi::PyLong_CheckExact(v.as_ptr()) } == 0 {
                        return Err(invalid(format!("RANGE {field} is not an int")));
                    }
                }
                // SAFETY: step is an int; truth testing an int cannot fail.
                if unsafe { ffi::PyObject_IsTrue(step.as_ptr()) } == 0 {
                    return Err(invalid(String::from("RANGE step is zero")));
                }
                let range = (&raw mut ffi::PyRange_Type).cast::<ffi::PyObject>();
                self.call(range, &[start.as_ptr(), stop.as_ptr(), step.as_ptr()], what)
            }
            (ExtCode::Slice, [start, stop, step]) => {
                // SAFETY: PySlice_New takes its own references to three live objects.
                let ptr = unsafe { ffi::PySlice_New(start.as_ptr(), stop.as_ptr(), step.as_ptr()) };
                self.made(ptr, what)
            }
            _ => Err(invalid(format!("{what} got {} values", values.len()))),
        }
    }

    /// Checks that `v` is an exact int of at most 65536 bits; returns its sign.
    fn bounded_int(&mut self, v: &PyObj, what: &str) -> Result<i32, BuildError> {
        const MAX_BITS: u64 = 1 << 16;
        // SAFETY: type check on a live object.
        if unsafe { ffi::PyLong_CheckExact(v.as_ptr()) } == 0 {
            return Err(invalid(format!("{what} is not an int")));
        }
        let mut overflow = 0;
        // SAFETY: v is an exact int; overflow is reported, not raised.
        let small = unsafe { ffi::PyLong_AsLongLongAndOverflow(v.as_ptr(), &mut overflow) };
        if overflow == 0 {
            return Ok(small.signum() as i32);
        }
        let bits = self.call_method(v.as_ptr(), c"bit_length", &[], what)?;
        // SAFETY: bit_length returns an int; -1 with an error only on absurd sizes.
        let bits = unsafe { ffi::PyLong_AsUnsignedLongLong(bits.as_ptr()) };
        // SAFETY: clears a possible OverflowError (treated as too many bits).
        unsafe { ffi::PyErr_Clear() };
        if bits > MAX_BITS {
            return Err(invalid(format!(
                "{what} has more than 65536 bits: it exceeds the 65536-bit limit"
            )));
        }
        Ok(overflow)
    }
}
