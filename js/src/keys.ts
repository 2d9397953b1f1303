// Dict keys and set elements (spec 7). A JS Map compares keys by SameValueZero, so equality in
// Python's sense is decided here instead: primitives (str, int, non-integral float, bool, None)
// compare by value, structured hashable values (tuples, frozensets, bytes, complex, integral
// floats, EXT blobs) by a fingerprint of their contents, and objects hashed by identity (class
// instances, NaN floats, ranges, ...) by identity. Numeric equality across kinds (1 == 1.0 ==
// True) is Python-specific and not applied: spec 7 lets such pairs through.

import { Tuple, FrozenSet, ByteArray, Complex, Float, CLASS } from "./types.js";
import { ExtBlobValue } from "./ext/base.js";
import { PyArray } from "./ext/array.js";
import { NDArray } from "./ext/ndarray.js";
import { Deque } from "./ext/composite.js";

export interface Fingerprinter {
  fingerprint(v: object, make: () => string): string | null;
}

const UNHASHABLE = 1, DUPLICATE = 2, HASH_LIMIT = 3;

/** Why a value cannot be a key: 0 (it can), UNHASHABLE. */
export function keyProblem(v: unknown): number {
  return isHashable(v) ? 0 : UNHASHABLE;
}

function isHashable(v: unknown): boolean {
  if (typeof v !== "object" || v === null) return true;
  if (v instanceof Tuple) {
    for (let i = 0; i < v.length; i++) if (!isHashable(v[i])) return false;
    return true;
  }
  if (Array.isArray(v) || v instanceof Map || v instanceof ByteArray || v instanceof Deque ||
      v instanceof PyArray || v instanceof NDArray) return false;
  if (v instanceof Set) return v instanceof FrozenSet;
  // A plain object is a dict (decode option dicts: "object"), unless it is a record of a
  // class (placeholders: "plain"), which hashes by identity as class instances do.
  const proto = Object.getPrototypeOf(v);
  if ((proto === Object.prototype || proto === null) && (v as Record<symbol, unknown>)[CLASS] === undefined) return false;
  return true;
}

/** The fingerprint of a structured hashable value, or undefined for one compared by identity. */
function structural(v: object, fp: Fingerprinter): string | null | undefined {
  if (v instanceof Float) return Number.isNaN(v.value) ? undefined : `f${Object.is(v.value, -0) ? "-0" : v.value}`;
  if (v instanceof Uint8Array) return fp.fingerprint(v, () => `y${latin1(v)}`);
  if (v instanceof Complex) return `c${v.re},${Object.is(v.im, -0) ? "-0" : v.im}`;
  if (v instanceof ExtBlobValue) return fp.fingerprint(v, () => `e${v.code}:${latin1(v.blob)}`);
  if (v instanceof Tuple) {
    return fp.fingerprint(v, () => {
      let s = "t(";
      for (let i = 0; i < v.length; i++) s += `${item(v[i], fp)},`;
      return `${s})`;
    });
  }
  if (v instanceof FrozenSet) {
    return fp.fingerprint(v, () => `z{${Array.from(v, (x) => item(x, fp)).sort().join(",")}}`);
  }
  return undefined;
}

let nextId = 1;
const ids = new WeakMap<object, number>();
function identity(v: object): string {
  let id = ids.get(v);
  if (id === undefined) { id = nextId++; ids.set(v, id); }
  return `#${id}`;
}

function item(v: unknown, fp: Fingerprinter): string {
  switch (typeof v) {
    case "string": return `s${v.length}:${v}`;
    case "number": return Number.isInteger(v) ? `i${v}` : `f${v}`;
    case "bigint": return `i${v}`;
    case "boolean": return v ? "T" : "F";
    case "object": {
      if (v === null) return "N";
      const s = structural(v, fp);
      if (s === null) throw new HashBudgetSpent();
      return s === undefined ? identity(v) : s;
    }
    default: return identity(v as object);
  }
}

class HashBudgetSpent extends Error {}

function latin1(b: Uint8Array): string {
  let s = "";
  for (let i = 0; i < b.length; i += 4096) s += String.fromCharCode.apply(null, b.subarray(i, i + 4096) as unknown as number[]);
  return s;
}

/** The keys seen so far in one dict or set. */
export class KeyTable {
  private plain = new Set<unknown>();
  private printed: Set<string> | null = null;

  /** 0 when `v` is a new key; else UNHASHABLE, DUPLICATE or HASH_LIMIT. */
  add(v: unknown, fp: Fingerprinter): number {
    if (typeof v !== "object" || v === null) {
      if (this.plain.has(v)) return DUPLICATE;
      this.plain.add(v);
      return 0;
    }
    if (!isHashable(v)) return UNHASHABLE;
    let s: string | null | undefined;
    try {
      s = structural(v, fp);
    } catch (e) {
      if (e instanceof HashBudgetSpent) return HASH_LIMIT;
      throw e;
    }
    if (s === null) return HASH_LIMIT;
    if (s === undefined) {
      if (this.plain.has(v)) return DUPLICATE;
      this.plain.add(v);
      return 0;
    }
    const printed = (this.printed ??= new Set());
    if (printed.has(s)) return DUPLICATE;
    printed.add(s);
    return 0;
  }
}
