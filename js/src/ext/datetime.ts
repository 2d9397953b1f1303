// DATE, TIME, DATETIME, TIMEDELTA, TZINFO (spec 5.16.3) and the `tz` field (spec 5.16.2).
// JS Date has milliseconds and no fold or named zones, so these are values of their own that
// keep every field of the blob: microseconds, fold, and the zone as written.

import { BlobReader, BlobWriter } from "./blob_reader.js";
import { ExtBlobValue, ExtCode } from "./base.js";
import { unzigzag, zigzag } from "../varint.js";

const DAY_US = 86_400_000_000;

/** A time zone: UTC, a fixed offset (with its name, none, or an explicitly empty one), or a
 * time-zone database key. */
export type Tz =
  | { kind: "utc" }
  | { kind: "fixed"; offsetMicroseconds: number; name: string | null }
  | { kind: "zone"; key: string };

export function daysInMonth(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return [31, 0, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1];
}

const ZONE_KEY = /^[A-Za-z0-9_+-]+(\/[A-Za-z0-9_+-]+)*$/;

function readTz(r: BlobReader, naiveAllowed: boolean): Tz | null {
  const kind = r.u8("tzkind");
  switch (kind) {
    case 0:
      if (!naiveAllowed) throw r.invalid("tzkind 0 (naive) is not allowed here");
      return null;
    case 1:
      return { kind: "utc" };
    case 2:
    case 4: {
      const off = unzigzag(r.varint("offset"));
      if (typeof off !== "number" || off <= -DAY_US || off >= DAY_US) {
        throw r.invalid(`offset ${off} microseconds is not strictly within one day`);
      }
      if (kind === 4) return { kind: "fixed", offsetMicroseconds: off, name: "" };
      const m = r.smallVarint("name length", r.left);
      const name = m === 0 ? null : r.utf8(r.take(m, "name"), "timezone name");
      return { kind: "fixed", offsetMicroseconds: off, name };
    }
    case 3: {
      const m = r.smallVarint("zone key length", r.left);
      if (m < 1 || m > 255) throw r.invalid(`zone key length ${m} is out of range 1..255`);
      const key = String.fromCharCode(...r.take(m, "zone key"));
      if (!ZONE_KEY.test(key)) throw r.invalid(`zone key ${JSON.stringify(key)} is not a valid key`);
      return { kind: "zone", key };
    }
    default:
      throw r.invalid(`tzkind ${kind} is not defined (0..4)`);
  }
}

function writeTz(w: BlobWriter, tz: Tz | null): void {
  if (tz === null) { w.u8(0); return; }
  switch (tz.kind) {
    case "utc": w.u8(1); return;
    case "fixed":
      if (tz.name === "") { w.u8(4).varint(zigzag(tz.offsetMicroseconds)); return; }
      w.u8(2).varint(zigzag(tz.offsetMicroseconds));
      if (tz.name === null) { w.varint(0); return; }
      { const b = new TextEncoder().encode(tz.name); w.varint(b.length).raw(b); }
      return;
    case "zone":
      if (!ZONE_KEY.test(tz.key) || tz.key.length > 255) throw new RangeError(`zone key ${tz.key} is not valid`);
      w.u8(3).varint(tz.key.length).raw(new TextEncoder().encode(tz.key));
      return;
  }
}

function readDate(r: BlobReader): [number, number, number] {
  const year = r.smallVarint("year", 1 << 30);
  const month = r.u8("month");
  const day = r.u8("day");
  if (year < 1 || year > 9999) throw r.invalid(`year ${year} is out of range 1..9999`);
  if (month < 1 || month > 12) throw r.invalid(`month ${month} is out of range 1..12`);
  const dim = daysInMonth(year, month);
  if (day < 1 || day > dim) throw r.invalid(`day ${day} is out of range 1..${dim}`);
  return [year, month, day];
}

function readClock(r: BlobReader): [number, number, number, number, number] {
  const hour = r.u8("hour"), minute = r.u8("minute"), second = r.u8("second");
  const microsecond = r.smallVarint("microsecond", 1 << 30);
  const flags = r.u8("flags");
  if (hour > 23) throw r.invalid(`hour ${hour} is out of range 0..23`);
  if (minute > 59) throw r.invalid(`minute ${minute} is out of range 0..59`);
  if (second > 59) throw r.invalid(`second ${second} is out of range 0..59`);
  if (microsecond > 999_999) throw r.invalid(`microsecond ${microsecond} is out of range 0..999999`);
  if (flags & ~1) throw r.invalid(`flags 0x${flags.toString(16)} set bits other than fold`);
  return [hour, minute, second, microsecond, flags & 1];
}

const pad = (n: number, w: number) => String(n).padStart(w, "0");

function tzText(tz: Tz | null): string {
  if (tz === null) return "";
  switch (tz.kind) {
    case "utc": return "+00:00";
    case "zone": return `[${tz.key}]`;
    case "fixed": {
      const sign = tz.offsetMicroseconds < 0 ? "-" : "+";
      let us = Math.abs(tz.offsetMicroseconds);
      const h = Math.floor(us / 3_600_000_000); us -= h * 3_600_000_000;
      const m = Math.floor(us / 60_000_000); us -= m * 60_000_000;
      const s = Math.floor(us / 1_000_000); us -= s * 1_000_000;
      return `${sign}${pad(h, 2)}:${pad(m, 2)}${s || us ? `:${pad(s, 2)}` : ""}${us ? `.${pad(us, 6)}` : ""}`;
    }
  }
}

/** datetime.date */
export class AmberDate extends ExtBlobValue {
  readonly code = ExtCode.DATE;
  constructor(readonly year: number, readonly month: number, readonly day: number, blob?: Uint8Array) {
    super(blob ?? new BlobWriter().varint(year).u8(month).u8(day).done());
  }
  static parse(blob: Uint8Array): AmberDate {
    const r = new BlobReader("DATE", blob);
    const [y, m, d] = readDate(r);
    r.end();
    return new AmberDate(y, m, d, blob);
  }
  override toString(): string { return `${pad(this.year, 4)}-${pad(this.month, 2)}-${pad(this.day, 2)}`; }
}

/** datetime.time */
export class AmberTime extends ExtBlobValue {
  readonly code = ExtCode.TIME;
  constructor(readonly hour: number, readonly minute: number, readonly second: number,
    readonly microsecond: number, readonly tz: Tz | null = null, readonly fold = 0, blob?: Uint8Array) {
    super(blob ?? (() => {
      const w = new BlobWriter().u8(hour).u8(minute).u8(second).varint(microsecond).u8(fold);
      writeTz(w, tz);
      return w.done();
    })());
  }
  static parse(blob: Uint8Array): AmberTime {
    const r = new BlobReader("TIME", blob);
    const [h, mi, s, us, fold] = readClock(r);
    const tz = readTz(r, true);
    r.end();
    return new AmberTime(h, mi, s, us, tz, fold, blob);
  }
  override toString(): string {
    return `${pad(this.hour, 2)}:${pad(this.minute, 2)}:${pad(this.second, 2)}` +
      `${this.microsecond ? `.${pad(this.microsecond, 6)}` : ""}${tzText(this.tz)}`;
  }
}

/** datetime.datetime */
export class AmberDateTime extends ExtBlobValue {
  readonly code = ExtCode.DATETIME;
  constructor(readonly year: number, readonly month: number, readonly day: number,
    readonly hour: number, readonly minute: number, readonly second: number,
    readonly microsecond: number, readonly tz: Tz | null = null, readonly fold = 0, blob?: Uint8Array) {
    super(blob ?? (() => {
      const w = new BlobWriter().varint(year).u8(month).u8(day).u8(hour).u8(minute).u8(second)
        .varint(microsecond).u8(fold);
      writeTz(w, tz);
      return w.done();
    })());
  }
  static parse(blob: Uint8Array): AmberDateTime {
    const r = new BlobReader("DATETIME", blob);
    const [y, mo, d] = readDate(r);
    const [h, mi, s, us, fold] = readClock(r);
    const tz = readTz(r, true);
    r.end();
    return new AmberDateTime(y, mo, d, h, mi, s, us, tz, fold, blob);
  }
  /** A JS Date (milliseconds only) for a datetime with a UTC or fixed offset; null otherwise. */
  toDate(): Date | null {
    if (this.tz === null || this.tz.kind === "zone") return null;
    const off = this.tz.kind === "utc" ? 0 : this.tz.offsetMicroseconds / 1000;
    return new Date(Date.UTC(this.year, this.month - 1, this.day, this.hour, this.minute, this.second,
      Math.floor(this.microsecond / 1000)) - off);
  }
  override toString(): string {
    return `${pad(this.year, 4)}-${pad(this.month, 2)}-${pad(this.day, 2)}T${pad(this.hour, 2)}:` +
      `${pad(this.minute, 2)}:${pad(this.second, 2)}${this.microsecond ? `.${pad(this.microsecond, 6)}` : ""}` +
      tzText(this.tz);
  }
}

/** datetime.timedelta, in Python's normalized form. */
export class TimeDelta extends ExtBlobValue {
  readonly code = ExtCode.TIMEDELTA;
  constructor(readonly days: number, readonly seconds: number, readonly microseconds: number, blob?: Uint8Array) {
    super(blob ?? new BlobWriter().varint(zigzag(days)).varint(seconds).varint(microseconds).done());
  }
  static parse(blob: Uint8Array): TimeDelta {
    const r = new BlobReader("TIMEDELTA", blob);
    const days = unzigzag(r.varint("days"));
    const seconds = r.smallVarint("seconds", 1 << 30);
    const us = r.smallVarint("microseconds", 1 << 30);
    r.end();
    if (typeof days !== "number" || days < -999_999_999 || days > 999_999_999) {
      throw r.invalid(`days ${days} is out of range -999999999..999999999`);
    }
    if (seconds > 86_399) throw r.invalid(`seconds ${seconds} is out of range 0..86399`);
    if (us > 999_999) throw r.invalid(`microseconds ${us} is out of range 0..999999`);
    return new TimeDelta(days, seconds, us, blob);
  }
  override toString(): string { return `${this.days}d ${this.seconds}s ${this.microseconds}us`; }
}

/** datetime.timezone or zoneinfo.ZoneInfo */
export class TzInfo extends ExtBlobValue {
  readonly code = ExtCode.TZINFO;
  constructor(readonly tz: Tz, blob?: Uint8Array) {
    super(blob ?? (() => { const w = new BlobWriter(); writeTz(w, tz); return w.done(); })());
  }
  static parse(blob: Uint8Array): TzInfo {
    const r = new BlobReader("TZINFO", blob);
    const tz = readTz(r, false)!;
    r.end();
    return new TzInfo(tz, blob);
  }
  override toString(): string { return this.tz.kind === "utc" ? "UTC" : tzText(this.tz); }
}
