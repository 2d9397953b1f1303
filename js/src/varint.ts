// Unsigned LEB128 varints of at most 10 bytes, minimal (spec 2.3), and zigzag (spec 2.4).
// Values below 2^53 are returned as numbers; the rare larger ones as bigints, so that nothing
// on the hot path pays for BigInt arithmetic.

import { decodeError } from "./errors.js";

/** Why a varint could not be read; the caller turns it into its own error kind. */
export const enum VarintFailure { Truncated = 1, Overflow = 2, Overlong = 3 }

/** Result slot of `readVarint`: its value, and the position after it (or a failure). */
export class VarintReader {
  value: number | bigint = 0;
  end = 0;
  failure: VarintFailure | 0 = 0;
  /** For a value beyond 2^53 (`value` is then the BIG marker): its 32-bit halves. Callers
   * that want a bigint call big(); zigzag decoding reads the halves directly. */
  lo = 0;
  hi = 0;

  /** The value as a number or bigint (resolving the BIG marker). */
  get exact(): number | bigint {
    return this.value === BIG ? fromHalves(this.lo, this.hi) : this.value;
  }

  /** The zigzag-decoded value: a number when it is a safe integer, else a bigint. */
  get signed(): number | bigint {
    const v = this.value;
    if (v !== BIG) return typeof v === "number" ? (v % 2 === 0 ? v / 2 : -(v + 1) / 2) : v;
    return unzigzagHalves(this.lo, this.hi);
  }

  /** Reads the varint at `pos`, stopping at `limit`. Returns false on failure. */
  read(buf: Uint8Array, pos: number, limit: number): boolean {
    const start = pos;
    let lo = 0; // bits 0..27
    let b: number;
    for (let shift = 0; shift < 28; shift += 7) {
      if (pos >= limit) return this.fail(VarintFailure.Truncated);
      b = buf[pos++];
      lo |= (b & 0x7f) << shift;
      if (b < 0x80) {
        if (b === 0 && pos - start > 1) return this.fail(VarintFailure.Overlong);
        this.value = lo >>> 0;
        this.end = pos;
        this.failure = 0;
        return true;
      }
    }
    // Five bytes or more: accumulate the high part as a float while it stays exact (< 2^53),
    // else as a bigint.
    let value = lo >>> 0;
    let scale = 268435456; // 2^28
    for (let i = 5; i <= 10; i++) {
      if (pos >= limit) return this.fail(VarintFailure.Truncated);
      b = buf[pos++];
      if (i === 10 && b > 0x01) return this.fail(VarintFailure.Overflow);
      value += (b & 0x7f) * scale;
      if (b < 0x80) {
        if (b === 0) return this.fail(VarintFailure.Overlong);
        this.end = pos;
        this.failure = 0;
        if (value <= Number.MAX_SAFE_INTEGER) {
          this.value = value;
        } else {
          const h = halves(buf, start, pos);
          this.lo = h[0];
          this.hi = h[1];
          this.value = BIG;
        }
        return true;
      }
      scale *= 128;
    }
    return this.fail(VarintFailure.Overflow); // unreachable: a 10th byte <= 1 ends the loop
  }

  private fail(f: VarintFailure): false {
    this.failure = f;
    return false;
  }

  /** Throws the spec's error for the last failure, at the varint's first byte. */
  throwAt(offset: number): never {
    switch (this.failure) {
      case VarintFailure.Truncated: throw decodeError("truncated", offset);
      case VarintFailure.Overflow: throw decodeError("varint_overflow", offset);
      case VarintFailure.Overlong: throw decodeError("overlong_varint", offset);
      case 0: throw new Error("no varint failure to report");
    }
  }
}

const scratch = new DataView(new ArrayBuffer(8));

/** Marks a varint beyond 2^53 whose halves are in lo and hi. */
export const BIG = -1;

function fromHalves(lo: number, hi: number): bigint {
  scratch.setUint32(0, lo, true);
  scratch.setUint32(4, hi, true);
  return scratch.getBigUint64(0, true);
}

function unzigzagHalves(lo: number, hi: number): number | bigint {
  const neg = lo & 1;
  let nlo = ((lo >>> 1) | ((hi & 1) << 31)) >>> 0;
  let nhi = hi >>> 1;
  // |n| < 2^53 exactly when the magnitude's high half is below 2^21.
  if (nhi < 0x200000) {
    const n = neg ? -(nhi * 4294967296 + nlo) - 1 : nhi * 4294967296 + nlo;
    if (Number.isSafeInteger(n)) return n;
  }
  if (neg) {
    nlo = ~nlo >>> 0;
    nhi = ~nhi >>> 0;
  }
  scratch.setUint32(0, nlo, true);
  scratch.setUint32(4, nhi, true);
  return scratch.getBigInt64(0, true);
}

/** The 64-bit value of the varint bytes, as its low and high 32-bit halves. */
function halves(buf: Uint8Array, start: number, end: number): [number, number] {
  let lo = 0, hi = 0;
  for (let i = 0; i < end - start; i++) {
    const g = buf[start + i] & 0x7f;
    const s = 7 * i;
    if (s < 32) {
      lo |= g << s;
      if (s + 7 > 32) hi |= g >>> (32 - s);
    } else {
      hi |= g << (s - 32);
    }
  }
  return [lo >>> 0, hi >>> 0];
}

/** A varint beyond 2^53 as a bigint, made natively from its halves (no BigInt arithmetic
 * per group: record payloads of 64-bit ids would pay it per value). */
function exactBig(buf: Uint8Array, start: number, end: number): bigint {
  const [lo, hi] = halves(buf, start, end);
  scratch.setUint32(0, lo, true);
  scratch.setUint32(4, hi, true);
  return scratch.getBigUint64(0, true);
}

/** Zigzag-decodes a 64-bit code given as a bigint, without BigInt arithmetic. */
export function unzigzagBig(z: bigint): number | bigint {
  scratch.setBigUint64(0, z, true);
  const lo = scratch.getUint32(0, true), hi = scratch.getUint32(4, true);
  const neg = lo & 1;
  let nlo = ((lo >>> 1) | ((hi & 1) << 31)) >>> 0;
  let nhi = hi >>> 1;
  if (neg) {
    nlo = ~nlo >>> 0;
    nhi = ~nhi >>> 0;
  }
  scratch.setUint32(0, nlo, true);
  scratch.setUint32(4, nhi, true);
  const n = scratch.getBigInt64(0, true);
  return n >= -9007199254740991n && n <= 9007199254740991n ? Number(n) : n;
}

/** The zigzag code of an i64 bigint, without BigInt arithmetic. */
export function zigzagBig(n: bigint): bigint {
  scratch.setBigInt64(0, n, true);
  const lo = scratch.getUint32(0, true), hi = scratch.getUint32(4, true);
  const sign = hi >>> 31 ? 0xffffffff : 0;
  const zlo = ((lo << 1) ^ sign) >>> 0;
  const zhi = (((hi << 1) | (lo >>> 31)) ^ sign) >>> 0;
  scratch.setUint32(0, zlo, true);
  scratch.setUint32(4, zhi, true);
  return scratch.getBigUint64(0, true);
}

/** Zigzag-decodes a varint value into a signed int (number when safe, else bigint). */
export function unzigzag(z: number | bigint): number | bigint {
  if (typeof z === "number") {
    // z < 2^53: (z >> 1) ^ -(z & 1) without 32-bit truncation.
    return z % 2 === 0 ? z / 2 : -(z + 1) / 2;
  }
  const n = (z >> 1n) ^ -(z & 1n);
  return n >= -9007199254740991n && n <= 9007199254740991n ? Number(n) : n;
}

/** Zigzag code of a signed 64-bit int. */
export function zigzag(n: number | bigint): number | bigint {
  // An odd code above 2^53 is not a double: negatives below -2^52 go through BigInt.
  if (typeof n === "number") return n >= 0 ? n * 2 : n >= -4503599627370496 ? -n * 2 - 1 : (BigInt(-n) << 1n) - 1n;
  return n >= 0n ? n << 1n : (-n << 1n) - 1n;
}

/** Byte length of the minimal varint of `v`. */
export function varintSize(v: number | bigint): number {
  let n = 1;
  if (typeof v === "number") {
    while (v >= 128) { v = Math.floor(v / 128); n++; }
    return n;
  }
  while (v >= 128n) { v >>= 7n; n++; }
  return n;
}
