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

export type ObjectKind =
  | "ATTRS" | "STATE" | "TUPLE_FIELDS" | "ENUM" | "CUSTOM" | "MUTABLE_SUBCLASS" | "VALUE_SUBCLASS" | "GLOBAL"
  | "REDUCE" | "NEWOBJ" | "EXCEPTION" | "REDUCE_KW" | "NEWOBJ_KW";
/** The kinds in code order (spec 5.17.3): a kind's index is its byte on the wire. */
export const OBJECT_KINDS: readonly ObjectKind[] = [
  "ATTRS", "STATE", "TUPLE_FIELDS", "ENUM", "CUSTOM", "MUTABLE_SUBCLASS", "VALUE_SUBCLASS", "GLOBAL",
  "REDUCE", "NEWOBJ", "EXCEPTION", "REDUCE_KW", "NEWOBJ_KW",
];

/** When an instance exists relative to its values (spec 5.17.3): created first, made from its
 * first value once that is complete, or built after all of them. */
export type Creation = "first" | "fromFirst" | "after";

export function creationOf(kind: ObjectKind): Creation {
  switch (kind) {
    case "ATTRS": case "STATE": case "MUTABLE_SUBCLASS":
      return "first";
    case "VALUE_SUBCLASS": case "REDUCE": case "NEWOBJ": case "EXCEPTION": case "REDUCE_KW": case "NEWOBJ_KW":
      return "fromFirst";
    case "TUPLE_FIELDS": case "ENUM": case "CUSTOM": case "GLOBAL":
      return "after";
  }
}

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
  /** As Python's Placeholder.state (spec 5.17.6): the values by field name (ATTRS,
   * TUPLE_FIELDS), the single value (STATE, ENUM, CUSTOM), null (GLOBAL), or a Tuple of the
   * values (the kinds with several). */
  get state(): Record<string, unknown> | unknown {
    if (this.fields === null) {
      if (this.kind === "GLOBAL") return null;
      if (this.kind === "STATE" || this.kind === "ENUM" || this.kind === "CUSTOM") return this.values[0];
      return Tuple.fromItems(this.values);
    }
    const out: Record<string, unknown> = {};
    this.fields.forEach((f, i) => { out[f] = this.values[i]; });
    return out;
  }
}

/** Python's Ellipsis and NotImplemented (EXT SINGLETON): one object each, like null, so they
 * are compared with === and never written as REF. */
export class PySingleton {
  private constructor(readonly name: "Ellipsis" | "NotImplemented", readonly byte: number) {}
  static readonly Ellipsis = new PySingleton("Ellipsis", 0);
  static readonly NotImplemented = new PySingleton("NotImplemented", 1);
  toString(): string { return this.name; }
}
export const Ellipsis = PySingleton.Ellipsis;
export const NotImplemented = PySingleton.NotImplemented;
