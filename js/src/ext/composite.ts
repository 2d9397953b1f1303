// The EXT composites (spec 5.16.4): values with child values. DEQUE, ORDERED_DICT, COUNTER and
// DEFAULTDICT and NAMESPACE are created first (they may contain themselves); FRACTION, RANGE and SLICE are
// built from complete values.

import { ExtCode } from "./base.js";

/** collections.deque */
export class Deque<T = unknown> {
  readonly code = ExtCode.DEQUE;
  constructor(public items: T[] = [], public maxlen: number | bigint | null = null) {}
}

/** collections.OrderedDict */
export class OrderedDict<K = unknown, V = unknown> extends Map<K, V> {
  readonly code = ExtCode.ORDERED_DICT;
}

/** collections.Counter */
export class Counter<K = unknown> extends Map<K, unknown> {
  readonly code = ExtCode.COUNTER;
}

/** types.SimpleNamespace: its attributes in order, by name (a Map, so that any name keeps
 * its place and none can touch a prototype). */
export class Namespace extends Map<string, unknown> {
  readonly code = ExtCode.NAMESPACE;
}

export const DEFAULTDICT_FACTORIES = [
  "list", "dict", "set", "int", "float", "str", "bytes", "tuple", "frozenset", "bool", "complex", "bytearray",
] as const;
export type DefaultFactory = (typeof DEFAULTDICT_FACTORIES)[number] | null;

/** collections.defaultdict, with the name of its builtin factory (or null). */
export class DefaultDict<K = unknown, V = unknown> extends Map<K, V> {
  readonly code = ExtCode.DEFAULTDICT;
  factory: DefaultFactory = null;
}

export type PyInt = number | bigint;

/** fractions.Fraction, in lowest terms. */
export class Fraction {
  readonly code = ExtCode.FRACTION;
  constructor(readonly numerator: PyInt, readonly denominator: PyInt) {}
  toString(): string { return `${this.numerator}/${this.denominator}`; }
}

/** range */
export class Range {
  readonly code = ExtCode.RANGE;
  constructor(readonly start: PyInt, readonly stop: PyInt, readonly step: PyInt) {}
  toString(): string { return `range(${this.start}, ${this.stop}, ${this.step})`; }
}

/** slice */
export class Slice {
  readonly code = ExtCode.SLICE;
  constructor(readonly start: unknown, readonly stop: unknown, readonly step: unknown) {}
}

function gcd(a: bigint, b: bigint): bigint {
  if (a < 0n) a = -a;
  if (b < 0n) b = -b;
  while (b) [a, b] = [b, a % b];
  return a;
}

const toInt = (v: bigint): PyInt => (v >= -9007199254740991n && v <= 9007199254740991n ? Number(v) : v);

/** Reduces numerator/denominator (denominator > 0), as Python's Fraction does. */
export function reducedFraction(num: PyInt, den: PyInt): Fraction {
  const n = BigInt(num), d = BigInt(den);
  const g = gcd(n, d) || 1n;
  return new Fraction(toInt(n / g), toInt(d / g));
}
