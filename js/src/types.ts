// The JS values that stand for amber kinds JS has no exact type for. Each is a distinct class
// so that the mapping is reversible: a tuple is not a list, a frozenset not a set, a bytearray
// not bytes, a float with an integral value not an int.

/** Python tuple: an Array subclass, so it reads like an array but is written as a TUPLE. */
export class Tuple<T = unknown> extends Array<T> {

  /** A tuple of the given items (Tuple.of(1) is the one-item tuple, unlike new Tuple(1)). */
  static fromItems<T>(items: readonly T[]): Tuple<T> {
    const t = new Tuple<T>(items.length);
    for (let i = 0; i < items.length; i++) t[i] = items[i];
    return t;
  }
}

/** Python frozenset. */
export class FrozenSet<T = unknown> extends Set<T> {}

/** Python bytearray: mutable bytes, distinct from bytes (a plain Uint8Array or Buffer). */
export class ByteArray extends Uint8Array {}

/** Python complex. */
export class Complex {
  constructor(readonly re: number, readonly im: number) {}
  toString(): string { return `(${this.re}${this.im < 0 || Object.is(this.im, -0) ? "-" : "+"}${Math.abs(this.im)}j)`; }
}

/**
 * A Python float that a JS number cannot carry unambiguously: one with an integral value
 * (1.0 and -0.0 would read as ints), or a NaN (whose payload bits are kept in `bits`).
 * Every other float decodes to a plain number. `valueOf` makes arithmetic work.
 */
export class Float {
  /** For a NaN: its 8 bytes, little-endian, so its payload survives. */
  readonly nanBits: Uint8Array | null;
  constructor(readonly value: number, nanBits?: Uint8Array) {
    this.nanBits = Number.isNaN(value) && nanBits ? nanBits : null;
  }
  valueOf(): number { return this.value; }
  toString(): string { return Object.is(this.value, -0) ? "-0.0" : Number.isInteger(this.value) ? `${this.value}.0` : String(this.value); }
}

/** With placeholders: "plain", an ATTRS instance of a class not allowed decodes to a plain
 * object of its fields, and this symbol holds its class ({module, qualname, kind, fields});
 * the encoder writes such an object back as that OBJECT. */
export const CLASS: unique symbol = Symbol.for("amber.class");

export type ObjectKind = "ATTRS" | "STATE" | "TUPLE_FIELDS" | "ENUM" | "CUSTOM";
export const OBJECT_KINDS: readonly ObjectKind[] = ["ATTRS", "STATE", "TUPLE_FIELDS", "ENUM", "CUSTOM"];

/**
 * An instance of a class the decoder was not given a JS class for (spec 5.17.6): its names,
 * kind, field names (ATTRS and TUPLE_FIELDS) and values. It is written back as the same shape
 * and values.
 */
export class Placeholder {
  constructor(
    readonly module: string,
    readonly qualname: string,
    readonly kind: ObjectKind,
    readonly fields: readonly string[] | null,
    public values: unknown[],
  ) {}
  /** The values by field name (ATTRS, TUPLE_FIELDS). */
  get state(): Record<string, unknown> | unknown {
    if (this.fields === null) return this.values[0];
    const out: Record<string, unknown> = {};
    this.fields.forEach((f, i) => { out[f] = this.values[i]; });
    return out;
  }
}
