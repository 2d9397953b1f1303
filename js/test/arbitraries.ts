// fast-check arbitraries for amber values as the JS mapping writes them: every kind, with
// the JS types that keep them apart (Tuple, FrozenSet, ByteArray, Float, bigint, ...).

import fc from "fast-check";
import { Tuple, FrozenSet, ByteArray, Float, Complex, Namespace, Placeholder, Ellipsis, NotImplemented } from "../src/index.js";

const asFloat = (x: number): number | Float => (Number.isInteger(x) || Number.isNaN(x) ? new Float(x) : x);

export const floats = fc.oneof(
  fc.double().map(asFloat),
  fc.float().map((x) => asFloat(x)),
  fc.constantFrom(0.1, 0.5, -0, Infinity, -Infinity, 5e-324).map(asFloat),
);
export const ints = fc.oneof(
  fc.integer({ min: -20, max: 300 }),
  fc.maxSafeInteger(),
  fc.bigInt({ min: -(2n ** 200n), max: 2n ** 200n }).map((b) => (b >= -(2n ** 53n) + 1n && b <= 2n ** 53n - 1n ? Number(b) : b)),
);
export const texts = fc.oneof(fc.string({ maxLength: 30 }), fc.string({ unit: "binary", maxLength: 12 }), fc.string({ unit: "grapheme", maxLength: 8 }));

export const hashableAtoms = fc.oneof(
  fc.constant(null), fc.boolean(), ints, floats, texts, fc.uint8Array({ maxLength: 40 }),
  fc.tuple(fc.double(), fc.double()).map(([a, b]) => new Complex(a, b)),
);
const atoms = fc.oneof(hashableAtoms, fc.uint8Array({ maxLength: 40 }).map((b) => new ByteArray(b)));

const { hashable } = fc.letrec((tie) => ({
  hashable: fc.oneof({ depthSize: "small", withCrossShrink: true }, hashableAtoms, tie("htuple"), tie("hfrozen")),
  htuple: fc.array(tie("hashable"), { maxLength: 4 }).map((xs) => Tuple.fromItems(xs)),
  hfrozen: fc.array(tie("hashable"), { maxLength: 4 }).map((xs) => new FrozenSet(xs)),
}));

/** Dict keys and set elements: values JS and Python both see as distinct when they differ.
 * Numbers are kept to ints and strings, since Python's 1 == 1.0 == True would merge keys. */
const keys = fc.oneof(ints, texts, fc.uint8Array({ maxLength: 8 }));

/** The fields of the fuzz's class of k fields: one array each, as a decoded shape has. */
const ROW_FIELDS = [[], ["a"], ["a", "b"], ["a", "b", "c"]];

/** Values of every kind; with `objectRows`, lists of instances of a class of no fixed table
 * too (fuzz:Row), which decode only with placeholders. */
function valueArbitrary(objectRows: boolean): fc.Arbitrary<unknown> {
  return fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: "small", withCrossShrink: true }, atoms, tie("list"), tie("tuple"), tie("dict"), tie("set"), tie("frozenset"), tie("numbers"), tie("rows"), ...(objectRows ? [tie("objectRows")] : []), tie("newForms")),
  list: fc.array(tie("value"), { maxLength: 6 }),
  numbers: fc.oneof(fc.array(ints, { minLength: 4, maxLength: 10 }), fc.array(floats, { minLength: 4, maxLength: 10 })),
  rows: fc.integer({ min: 1, max: 3 }).chain((k) => fc.array(fc.array(tie("value"), { minLength: k, maxLength: k }).map((r) => Tuple.fromItems(r)), { minLength: 4, maxLength: 6 })),
  // Instances of one ATTRS class in a list (object rows, spec 5.17.9), fields often floats
  // (float columns); decoded as placeholders.
  objectRows: fc.integer({ min: 1, max: 3 }).chain((k) =>
    fc.array(fc.array(fc.oneof(floats, tie("value")), { minLength: k, maxLength: k }), { minLength: 1, maxLength: 5 })
      .map((rows) => rows.map((values) => new Placeholder("fuzz", "Row", "ATTRS", ROW_FIELDS[k], values)))),
  tuple: fc.array(tie("value"), { maxLength: 6 }).map((xs) => Tuple.fromItems(xs)),
  dict: fc.uniqueArray(fc.tuple(keys, tie("value")), { maxLength: 6, selector: (p) => keyId(p[0]) }).map((ps) => new Map(ps)),
  set: fc.uniqueArray(keys, { maxLength: 6, selector: keyId }).map((xs) => new Set(xs)),
  frozenset: fc.uniqueArray(keys, { maxLength: 6, selector: keyId }).map((xs) => new FrozenSet(xs)),
  // The forms of spec 14's 2026-11-25 entry that a decoder without types makes: namespaces,
  // the singletons, and the classes of the fixed tables (builtin types, builtin exceptions).
  newForms: fc.oneof(
    fc.uniqueArray(fc.tuple(texts, tie("value")), { maxLength: 4, selector: (p) => p[0] }).map((ps) => {
      const ns = new Namespace();
      for (const [k, v] of ps) ns.set(k, v);
      return ns;
    }),
    fc.constantFrom(Ellipsis, NotImplemented),
    fc.constantFrom("int", "str", "type", "ValueError").map((q) => new Placeholder("builtins", q, "GLOBAL", null, [])),
    fc.tuple(fc.constantFrom("ValueError", "KeyError", "RuntimeError"), fc.array(tie("value"), { maxLength: 3 }), fc.boolean()).map(([q, args, suppress]) =>
      new Placeholder("builtins", q, "EXCEPTION", null, [Tuple.fromItems(args), null, null, null, suppress])),
  ),
  })).value;
}

/** Values Python reads without types (the differential test's). */
export const values = valueArbitrary(false);
/** Values with object rows (spec 5.17.9) of placeholders as well. */
export const valuesWithRows = valueArbitrary(true);

function keyId(k: unknown): string {
  if (k instanceof Uint8Array) return `b${Array.from(k).join(",")}`;
  return `${typeof k === "string" ? "s" : "i"}${String(k)}`;
}

export { hashable };
