// The JS API beyond the vectors: the type mapping both ways, limits, error classes, identity,
// out-of-band buffers, envelopes (node:crypto and WebCrypto) and incremental stream reading.

import { test } from "node:test";
import assert from "node:assert/strict";
import {
  decode, decodeAsync, encode, encodeAsync, Tuple, FrozenSet, ByteArray, Float, Complex, Decimal, AmberDateTime,
  DecodeError, DecodeLimitError, trace, SignatureError, ClassNotAllowedError, EncodeError, Placeholder, StreamReader,
  StreamWriter, PyArray, Deque, OrderedDict, Fraction, Range, OOB_THRESHOLD, Uuid, AmberDate, CLASS, inspectLines,
  stats, statsLines, type AllowedClass,
} from "../src/index.js";
import { hexBytes, toHex, asTheMachine, budgetsBelowFailAsTheMachine } from "./notation.js";
import fc from "fast-check";
import { hasLoneSurrogateByPattern } from "../src/utf8.js";
import { decodeBody } from "../src/decode.js";

const SECRET = new TextEncoder().encode("amber envelope test secret one!!");

test("the mapping: each amber kind comes back as its own JS type", () => {
  const value = new Map<unknown, unknown>([
    ["list", [1, 2, 3]],
    ["tuple", Tuple.fromItems([1, "a"])],
    ["set", new Set([1, 2])],
    ["frozenset", new FrozenSet(["x"])],
    ["bytes", new Uint8Array([0, 255])],
    ["bytearray", new ByteArray([1, 2])],
    ["float 1.0", new Float(1)],
    ["float -0.0", new Float(-0)],
    ["float 0.5", 0.5],
    ["big", 2n ** 70n],
    ["i64", -(2n ** 60n)],
    ["complex", new Complex(1, -2)],
    ["decimal", Decimal.fromString("-12.50")],
    [Tuple.fromItems([1, 2]), "tuple key"],
  ]);
  const back = decode(encode(value)) as Map<unknown, unknown>;
  assert.ok(back instanceof Map);
  const get = (k: string) => back.get(k);
  assert.deepEqual(get("list"), [1, 2, 3]);
  assert.ok(get("tuple") instanceof Tuple);
  assert.ok(get("set") instanceof Set && !(get("set") instanceof FrozenSet));
  assert.ok(get("frozenset") instanceof FrozenSet);
  assert.ok(get("bytes") instanceof Uint8Array && !(get("bytes") instanceof ByteArray));
  assert.ok(get("bytearray") instanceof ByteArray);
  assert.ok(get("float 1.0") instanceof Float && (get("float 1.0") as Float).value === 1);
  assert.ok(Object.is((get("float -0.0") as Float).value, -0));
  assert.equal(get("float 0.5"), 0.5);
  assert.equal(get("big"), 2n ** 70n);
  assert.equal(get("i64"), -(2n ** 60n), "an int outside the safe range stays exact, as a bigint");
  assert.equal(String(get("decimal")), "-1250E-2");
  assert.deepEqual([...back.keys()].at(-1), Tuple.fromItems([1, 2]));
  // And the bytes of a re-encode are the same: nothing was lost.
  assert.equal(toHex(encode(back)), toHex(encode(value)));
});

test("JS values without an amber twin: plain objects are dicts, Dates are UTC datetimes", () => {
  const back = decode(encode({ a: 1, b: [true, null], when: new Date(Date.UTC(2024, 4, 17, 13, 45, 30, 250)) })) as Map<string, unknown>;
  assert.equal(back.get("a"), 1);
  const when = back.get("when") as AmberDateTime;
  assert.ok(when instanceof AmberDateTime);
  assert.equal(when.microsecond, 250000);
  assert.deepEqual(when.tz, { kind: "utc" });
  assert.equal(when.toDate()!.toISOString(), "2024-05-17T13:45:30.250Z");
  assert.throws(() => encode({ a: undefined }), EncodeError);
  assert.throws(() => encode(() => 1), EncodeError);
});

test("datetimes keep microseconds and the zone as written", () => {
  // spec 5.16.5: 2024-05-17 13:45:30.250000+02:00
  const v = decode(hexBytes("ab41017603 12 e80f0511 0d2d1e 90a10f 00 02 80a0bad235 00")) as AmberDateTime;
  assert.equal(v.toString(), "2024-05-17T13:45:30.250000+02:00");
  assert.equal(v.microsecond, 250000);
  const again = new AmberDateTime(2024, 5, 17, 13, 45, 30, 250000, { kind: "fixed", offsetMicroseconds: 7_200_000_000, name: null });
  assert.equal(toHex(encode(again)), "ab41017603" + "12e80f05110d2d1e90a10f000280a0bad23500");
  assert.equal(toHex(encode(new AmberDate(2024, 5, 17))), "ab41017601" + "04e80f0511");
  assert.equal(Uuid.fromString("12345678-1234-5678-1234-567812345678").toString(), "12345678-1234-5678-1234-567812345678");
});

test("identity: shared containers and cycles come back shared, tuples too", () => {
  const l: unknown[] = [];
  const t = Tuple.fromItems([l]);
  l.push(t);
  const back = decode(encode(t)) as Tuple;
  assert.ok(back instanceof Tuple);
  assert.equal(((back[0] as unknown[])[0]), back, "the cycle through the tuple is kept");
  const d = new Deque<unknown>();
  d.items.push(d);
  const dd = decode(encode(d)) as Deque;
  assert.equal(dd.items[0], dd);
  const shared = [1, 2];
  const pair = decode(encode([shared, shared])) as unknown[][];
  assert.equal(pair[0], pair[1]);
  const copies = decode(encode([shared, shared], { refs: false })) as unknown[][];
  assert.notEqual(copies[0], copies[1]);
  assert.deepEqual(copies[0], copies[1]);
});

test("records: lists of dicts with the same keys are written once, as plain objects or Maps", () => {
  const rows = [{ id: 1, name: "ab" }, { id: 2, name: "cd" }];
  const bytes = encode(rows);
  assert.equal(toHex(bytes), "ab41017b0202426964446e616d650142616202426364");
  assert.equal(toHex(encode(rows.map((r) => new Map(Object.entries(r))))), toHex(bytes));
  // Maps by default, objects on request; the rows are dicts of their own either way.
  const maps = decode(bytes) as Map<string, unknown>[];
  assert.deepEqual(maps.map((m) => [...m]), [[["id", 1], ["name", "ab"]], [["id", 2], ["name", "cd"]]]);
  const objects = decode(bytes, { dicts: "object" }) as Record<string, unknown>[];
  assert.deepEqual(objects, rows as Record<string, unknown>[]);
  assert.notEqual(objects[0], objects[1]);
  objects[0].extra = 1;
  assert.equal("extra" in objects[1], false);
  // Keys an object cannot keep in order make Map rows even in object mode.
  const indexed = decode(encode([new Map([["1", 1], ["b", 2]]), new Map([["1", 3], ["b", 4]])]), { dicts: "object" });
  assert.ok((indexed as unknown[]).every((row) => row instanceof Map));
  // Not records: one key, another order, a non-str key, canonical mode, a dict held twice.
  assert.equal(encode([{ a: 1 }, { a: 2 }])[3], 0x5a);
  assert.equal(encode([{ a: 1, b: 2 }, { b: 3, a: 4 }])[3], 0x5a);
  assert.equal(encode([new Map<unknown, unknown>([[1, 1], ["b", 2]]), new Map<unknown, unknown>([[1, 3], ["b", 4]])])[3], 0x5a);
  assert.equal(encode(rows, { canonical: true })[3], 0x5a);
  const shared = { a: 1, b: 2 };
  assert.equal(encode([shared, { a: 3, b: 4 }, shared])[3], 0x5b);
  assert.equal(encode([shared, shared], { refs: false })[3], 0x7b);
  // An undefined value is refused with its place.
  assert.throws(() => encode([{ a: 1, b: 2 }, { a: 3, b: undefined }]), (e: unknown) => e instanceof EncodeError && /undefined/.test(String(e)));
});

test("records and object rows: each list made for all its rows at once, filled as the machine fills it", () => {
  // The list of a RECORDS or OBJECT_ROWS is made with its declared row count and filled by
  // index: a row may hold the list itself (recorded before its rows), there may be none, or
  // too many for the input (refused before any list is made).
  const modes = [{}, { placeholders: true }, { placeholders: "plain" as const, dicts: "object" as const }];
  const list: unknown[] = Array.from({ length: 5 }, (_, i) => new Map<string, unknown>([["a", i], ["b", null]]));
  (list[1] as Map<string, unknown>).set("b", list);
  const cyclic = encode(list);
  assert.equal(cyclic[3], 0xfb);
  const rows = [point(0.5, 1), point(1.5, list), point(2.5, null)];
  list.push(rows);
  const both = encode(Tuple.fromItems([list, rows]));
  for (const options of modes) {
    assert.equal(asTheMachine(cyclic, options), null);
    // (Without placeholders the rows' class is refused; trace allows placeholders.)
    if (options !== modes[0]) assert.equal(asTheMachine(both, options), null);
    const back = decode(cyclic, options) as unknown[];
    assert.equal(back.length, 5);
    const row = back[1];
    assert.equal(row instanceof Map ? row.get("b") : (row as Record<string, unknown>).b, back);
    // No rows: an empty list, not one of a hole.
    assert.deepEqual(decode(hexBytes("ab4101 7b 00 01 4161"), options), []);
    const e = asTheMachine(hexBytes("ab4101 7b 05 01 4161 01 02"), options);
    assert.equal(e?.kind, "length_too_large");
  }
});

// OBJECT_ROWS (spec 5.17.9): the Point of the spec's examples, as a placeholder.
const POINT = ["_vector_classes", "Point"] as const;
const point = (...values: unknown[]) => new Placeholder(...POINT, "ATTRS", ["x", "y"], values);
/** The float columns an OBJECT_ROWS payload of one Point shape defined at its start names. */
const pointColumns = (b: Uint8Array): number[] => {
  assert.equal(b[3] & 0x7f, 0x7d);
  const at = 3 + 2 + 1 + 16 + 6 + 1 + 5; // tag, count, shape 0, module, qualname, kind, 2 fields
  return Array.from(b.subarray(at + 1, at + 1 + b[at]));
};

test("object rows: a list of placeholders of one ATTRS shape, float columns as raw binary64", () => {
  const spec = encode([point(1, 2), point(3, 4)]);
  assert.equal(toHex(spec), "ab41017d02000f5f766563746f725f636c617373657305506f696e740002017801790001020304");
  // x: FLOAT64 floats (a later integral Float, -0.0, a NaN with its payload and an infinity
  // are column values too); y: a first value FLOAT32 holds keeps its column tagged.
  const nan = new Float(NaN, Uint8Array.from([1, 0, 0, 0, 0, 0, 0xf8, 0x7f]));
  const rows = [point(0.1, 1.5), point(new Float(2), 0.2), point(-0, "y"), point(nan, null), point(-Infinity, [1])];
  const bytes = encode(rows);
  assert.deepEqual(pointColumns(bytes), [0]);
  const back = decode(bytes, { placeholders: true }) as Placeholder[];
  assert.ok(Array.isArray(back) && back.length === rows.length && back.every((p) => p instanceof Placeholder));
  assert.notEqual(back[0], back[1]);
  assert.equal(back[0].values[0], 0.1);
  assert.ok(back[1].values[0] instanceof Float && (back[1].values[0] as Float).value === 2);
  assert.ok(Object.is((back[2].values[0] as Float).value, -0));
  assert.deepEqual((back[3].values[0] as Float).nanBits, nan.nanBits);
  assert.deepEqual(back[4].values[1], [1]);
  assert.deepEqual(back[0].state, { x: 0.1, y: 1.5 });
  assert.equal(toHex(encode(back)), toHex(bytes));
  // One instance, instances of two classes or of no fields, canonical mode: a LIST.
  assert.equal(encode([point(0.1, 2)])[3], 0x59);
  assert.equal(encode([point(1, 2), new Placeholder(POINT[0], "Other", "ATTRS", ["x", "y"], [1, 2])])[3], 0x5a);
  assert.equal(encode([point(1, 2), new Placeholder(...POINT, "ATTRS", ["y", "x"], [1, 2])])[3], 0x5a);
  const empty = () => new Placeholder(POINT[0], "Empty", "ATTRS", [], []);
  assert.equal(encode([empty(), empty()])[3], 0x5a);
  assert.equal(encode(rows, { canonical: true })[3], 0x71);
  // A list of rows inside a MUTABLE_SUBCLASS is a list to its value rules (spec 5.17.3).
  const items = new Placeholder(POINT[0], "Items", "MUTABLE_SUBCLASS", null, [[point(1, 2), point(3, 4)], null]);
  const wrapped = decode(encode(items), { placeholders: true }) as Placeholder;
  assert.equal(toHex(encode(wrapped)), toHex(encode(items)));
  // A value that is undefined is refused with its place.
  assert.throws(() => encode([point(1, 2), point(3, undefined)]), (e: unknown) => e instanceof EncodeError && e.path === "root[1][1]");
});

test("object rows: instances of allowed classes, with their declared fields", () => {
  class Point { x: unknown; y: unknown; constructor(x: unknown, y: unknown) { this.x = x; this.y = y; } }
  const types: AllowedClass[] = [{ name: POINT.join(":"), kind: "ATTRS", cls: Point, fields: ["x", "y"] }];
  const rows = [new Point(0.25, "a"), new Point(0.5, "b"), new Point(0.1, "c")];
  const bytes = encode(rows, { types });
  // The same bytes as the placeholders of those instances; x's first value is FLOAT32.
  assert.equal(toHex(bytes), toHex(encode(rows.map((p) => point(p.x, p.y)))));
  assert.deepEqual(pointColumns(bytes), []);
  const back = decode(bytes, { types }) as Point[];
  assert.ok(back.every((p) => p instanceof Point));
  assert.deepEqual(back.map((p) => [p.x, p.y]), rows.map((p) => [p.x, p.y]));
  assert.equal(toHex(encode(back, { types })), toHex(bytes));
  const columns = encode([new Point(0.1, 1), new Point(0.2, 2)], { types });
  assert.deepEqual(pointColumns(columns), [0]);
  assert.deepEqual((decode(columns, { types }) as Point[]).map((p) => p.x), [0.1, 0.2]);
  // Schema evolution as for an ATTRS OBJECT, reported at the OBJECT_ROWS tag: a field the
  // class lacks is dropped (or refused), one it needs and the payload lacks is missing.
  const fewer = decode(bytes, { types: [{ ...types[0], fields: ["x"] }] }) as Point[];
  assert.deepEqual(fewer.map((p) => Object.keys(p)), [["x"], ["x"], ["x"]]);
  const refused = (options: object, kind: string) => {
    const e = asTheMachine(bytes, options);
    assert.ok(e instanceof DecodeError && e.kind === kind && e.offset === 3, `${kind}: ${e}`);
  };
  refused({ types: [{ ...types[0], fields: ["x"] }], unknownFields: "error" }, "unknown_field");
  refused({ types: [{ ...types[0], fields: ["x", "y", "z"] }] }, "missing_field");
  refused({ types: [{ ...types[0], kind: "STATE" }] }, "bad_shape");
  assert.throws(() => decode(bytes), (e: unknown) => e instanceof ClassNotAllowedError && e.offset === 3);
});

test("object rows: plain records (placeholders: \"plain\") are written back as they came", () => {
  const rows = [point(0.1, "a"), point(0.2, [1, 2]), point(0.3, new Map([["k", point(0.4, null)]]))];
  const bytes = encode(rows);
  assert.deepEqual(pointColumns(bytes), [0]);
  for (const dicts of ["map", "object"] as const) {
    const back = decode(bytes, { placeholders: "plain", dicts }) as Record<string | symbol, unknown>[];
    assert.deepEqual(back.map((r) => Object.keys(r)), [["x", "y"], ["x", "y"], ["x", "y"]]);
    assert.deepEqual(back[0][CLASS], { module: POINT[0], qualname: POINT[1], kind: "ATTRS", fields: ["x", "y"] });
    assert.equal(back[0].x, 0.1);
    assert.equal(toHex(encode(back)), toHex(bytes));
  }
  // A field no literal can take (__proto__): an own property, never the prototype.
  const odd = () => new Placeholder(POINT[0], "Odd", "ATTRS", ["__proto__", "z"], [{ polluted: true }, 0.5]);
  const oddBytes = encode([odd(), odd()]);
  const back = decode(oddBytes, { placeholders: "plain" }) as Record<string, unknown>[];
  assert.equal(Object.getPrototypeOf(back[0]), Object.prototype);
  assert.ok(Object.prototype.hasOwnProperty.call(back[0], "__proto__"));
  assert.equal(toHex(encode(back)), toHex(oddBytes));
});

test("object rows: a shared instance keeps the list a LIST; a shared or later non-float keeps a column tagged", () => {
  const p = point(1, 2);
  assert.equal(encode([p, point(3, 4), p])[3], 0x5b);
  // Without refs nothing is shared: each occurrence is a row of its own.
  const copies = encode([p, point(3, 4), p], { refs: false });
  assert.equal(copies[3], 0x7d);
  const back = decode(copies, { placeholders: true }) as Placeholder[];
  assert.notEqual(back[0], back[2]);
  // A cycle through a row's instance, without refs, is refused with its place.
  const loop = point(1, 2);
  loop.values[1] = [loop];
  assert.throws(() => encode([point(1, 2), loop], { refs: false }), (e: unknown) => e instanceof EncodeError && e.path === "root[1][1][0]");
  // An instance held elsewhere in the graph too.
  assert.equal(encode(Tuple.fromItems([[p, point(3, 4)], p]))[4], 0x5a);
  // A later value that is not a float, or not one at all, keeps its column tagged.
  assert.deepEqual(pointColumns(encode([point(0.1, 1), point(2, 1)])), []);
  assert.deepEqual(pointColumns(encode([point(0.1, 1), point("0.2", 1)])), []);
  assert.deepEqual(pointColumns(encode([point(0.1, 0.3), point(0.2, 0.4)])), [0, 1]);
  // A Float object (a NaN here, FLOAT64) that two rows hold is written once, then as REF.
  const nan = new Float(NaN);
  const shared = encode([point(nan, 1), point(nan, 2)]);
  assert.deepEqual(pointColumns(shared), []);
  const twice = decode(shared, { placeholders: true }) as Placeholder[];
  assert.equal(twice[0].values[0], twice[1].values[0]);
  // A row's value may be the list itself (recorded before its rows).
  const list: unknown[] = [point(0.1, 1), point(0.2, 2)];
  (list[1] as Placeholder).values[1] = list;
  const cyclic = decode(encode(list), { placeholders: true }) as Placeholder[];
  assert.equal(cyclic[1].values[1], cyclic);
});

test("object rows: the fast path and the stack machine agree, in every mode, at any depth and cut", () => {
  class Point { x: unknown; y: unknown; }
  const modes = [
    { placeholders: true }, { placeholders: "plain" as const, dicts: "object" as const },
    { types: [{ name: POINT.join(":"), kind: "ATTRS" as const, cls: Point, fields: ["x", "y"] }] },
  ];
  const agree = (payload: Uint8Array) => {
    for (const options of modes) asTheMachine(payload, options);
  };
  const nan = new Float(NaN, Uint8Array.from([1, 0, 0, 0, 0, 0, 0xf8, 0x7f]));
  const rows = [point(0.1, "a"), point(new Float(2), [point(1, 2), point(3, 4)]), point(nan, null), point(-0.5, new Map([[1, 2]]))];
  const payload = encode(rows);
  agree(payload);
  // Without float columns, plain records are read by their shape's generated reader.
  agree(encode([point(1, "a"), point(2, [point(3, 4), point(5, 6)]), point(-1, 0.1)]));
  // Rows nested in rows deeper than the fast path goes (128 levels), columns included.
  let deep: unknown = [point(0.1, 1), point(0.2, 2)];
  for (let i = 0; i < 100; i++) deep = [point(0.1, deep), point(0.2, null)];
  agree(encode(deep));
  // Tracked (a REF to the list from its rows) and every cut of the payload: the same value,
  // or the same error at the same offset.
  const list: unknown[] = [point(0.1, 1), point(0.2, 2)];
  (list[0] as Placeholder).values[1] = list;
  agree(encode(list));
  for (let cut = 4; cut < payload.length; cut++) agree(payload.subarray(0, cut));
  // Every allocation budget that runs out inside the rows.
  budgetsBelowFailAsTheMachine(payload, modes[1], 2000, 5, 1 << 20);
});

test("object rows: inspect lists the rows, and each float column value with its field", () => {
  const bytes = encode([point(0.1, "a"), point(0.2, "b")]);
  assert.equal(toHex(bytes), "ab41017d02000f5f766563746f725f636c617373657305506f696e7400020178017901009a9999999999b93f41619a9999999999c93f4162");
  const t = trace(bytes);
  assert.deepEqual(inspectLines(bytes, t), [
    "     0  ab 41 01                  HEADER  version 1",
    "     3  7d 02 00 0f 5f 76 65 63 ..OBJECT_ROWS  list of 2 instances of _vector_classes:Point, as object rows, shape 0 (defined here: x, y); float column: x",
    "    36                              row 0  _vector_classes:Point of 2 fields",
    "    36  9a 99 99 99 99 99 b9 3f       column  0.1 (float column x: 8 bytes, no tag)",
    "    44  41                            SHORT_STR  'a'",
    "    46                              row 1  _vector_classes:Point of 2 fields",
    "    46  9a 99 99 99 99 99 c9 3f       column  0.2 (float column x: 8 bytes, no tag)",
    "    54  41                            SHORT_STR  'b'",
    "end: 56 bytes, 5 values",
  ]);
  // The rows' values tile the body after the list's head: the columns are values too.
  const [list, ...values] = t.events;
  assert.equal(values[0].offset, list.headEnd);
  for (let i = 1; i < values.length; i++) assert.equal(values[i].offset, values[i - 1].end);
  assert.equal(values.at(-1)!.end, list.end);
  const s = stats(bytes.length, t.events);
  assert.deepEqual([s.maxDepth, s.shapes, s.types.get("float")?.count, s.types.get("float")?.bytes, s.types.get("list")?.bytes], [2, 1, 2, 16, 33]);
  assert.ok(statsLines(s).some((l) => /^float +2 +16 /.test(l)));
  // A later OBJECT_ROWS of the shape refers to it; a cut column is where the listing stops.
  const again = encode(Tuple.fromItems([[point(0.1, 1), point(0.2, 2)], [point(0.3, 3), point(0.4, 4)]]));
  assert.match(inspectLines(again, trace(again)).join("\n"), /OBJECT_ROWS {2}list of 2 instances of _vector_classes:Point, as object rows, shape 0; float column: x/);
  const longer = encode([point(0.1, "a".repeat(10)), point(0.2, "b")]);
  const cut = longer.subarray(0, 59);
  const lines = inspectLines(cut, trace(cut));
  assert.deepEqual(lines.slice(-3), [
    "    55                              row 1  _vector_classes:Point of 2 fields",
    "    55  9a 99 99 99                   column  (incomplete)",
    "error: the input ends inside a float column's 8 bytes (at byte 55, truncated)",
  ]);
});

test("refs: false refuses cycles and names the path", () => {
  const l: unknown[] = [1];
  l.push([l]);
  assert.throws(() => encode(l, { refs: false }), (e: unknown) => e instanceof EncodeError && e.path === "root[1][0]");
});

test("depth: 10000 levels decode without the call stack; one more fails with depth_limit", () => {
  const deep = (n: number) => {
    const b = new Uint8Array(3 + n);
    b.set([0xab, 0x41, 0x01]);
    b.fill(0x59, 3, 3 + n - 1);
    b[3 + n - 1] = 0x58;
    return b;
  };
  let v = decode(deep(10000), { maxDepth: 10000 }) as unknown[];
  let levels = 1;
  while (v.length) { v = v[0] as unknown[]; levels++; }
  assert.equal(levels, 10000);
  assert.throws(() => decode(deep(10001), { maxDepth: 10000 }), (e: unknown) => e instanceof DecodeLimitError && e.kind === "depth_limit" && e.offset === 3 + 10000);
  assert.throws(() => decode(deep(3), { maxDepth: 10001 }), RangeError);
  let nested: unknown = [];
  for (let i = 1; i < 1000; i++) nested = [nested];
  assert.equal(encode(nested).length, 3 + 1000);
  assert.throws(() => encode([nested]), (e: unknown) => e instanceof EncodeError && /max_depth=1000/.test(e.message));
});

test("depth: the encoder writes 10000 levels of every kind of container, and refuses one more", () => {
  // Past a few hundred levels the encoder walks with an explicit stack: no stack overflow.
  // Each kind with the levels of depth one application adds.
  const kinds: [(inner: unknown) => unknown, number][] = [
    [(x) => [x], 1],
    [(x) => Tuple.fromItems([x, 1]), 1],
    [(x) => new Map([["k", x]]), 1],
    [(x) => ({ k: x }), 1],
    [(x) => new Placeholder("m", "C", "ATTRS", ["f"], [x]), 1],
    [(x) => new Deque([x], null), 2],
    [(x) => new FrozenSet([Tuple.fromItems([x])]), 2],
  ];
  for (const [make, per] of kinds) {
    let v: unknown = 0;
    for (let i = 0; i < 10000 / per; i++) v = make(v);
    const bytes = encode(v, { maxDepth: 10000 });
    // (Not decoded for frozensets: a set element's fingerprint holds every level below it,
    // and the decoder's hashing budget refuses 5000 levels of them, as it should.)
    if (per === 1 || make === kinds[5][0]) {
      assert.equal(toHex(encode(decode(bytes, { maxDepth: 10000, placeholders: true }), { maxDepth: 10000 })), toHex(bytes));
    }
    assert.throws(() => encode(make(v), { maxDepth: 10000 }), (e: unknown) => e instanceof EncodeError && /max_depth=10000/.test(e.message));
  }
  // Shared values and a cycle through a tuple (SUPERSEDE), thousands of levels down.
  const shared = [1, 2];
  let deep: unknown = Tuple.fromItems([shared, shared]);
  for (let i = 0; i < 5000; i++) deep = [deep];
  const cyclic: unknown[] = [];
  const t = Tuple.fromItems([cyclic]);
  cyclic.push(t);
  let deepCycle: unknown = t;
  for (let i = 0; i < 5000; i++) deepCycle = [deepCycle];
  const bytes = encode([deep, deepCycle], { maxDepth: 10000 });
  const back = decode(bytes, { maxDepth: 10000 }) as unknown[];
  let inner = back[0] as unknown[];
  for (let i = 0; i < 5000; i++) inner = inner[0] as unknown[];
  assert.equal(inner[0], inner[1]);
  let bt = back[1] as unknown[];
  for (let i = 0; i < 5000; i++) bt = bt[0] as unknown[];
  assert.ok(bt instanceof Tuple);
  assert.equal((bt[0] as unknown[])[0], bt);
});

test("error classes: limits, signatures and classes have their own", () => {
  assert.throws(() => decode(hexBytes("ab4101 58"), { maxAlloc: 1 }), DecodeLimitError);
  assert.throws(() => decode(hexBytes("ab4121 00")), (e: unknown) => e instanceof SignatureError && e.kind === "key_required");
  const obj = hexBytes("ab4101 77 00 026f73 0673797374656d 00 00");
  assert.throws(() => decode(obj), (e: unknown) => e instanceof ClassNotAllowedError && e.module === "os" && e.qualname === "system");
  const p = decode(obj, { placeholders: true }) as Placeholder;
  assert.equal(p.qualname, "system");
  assert.equal(toHex(encode(p)), toHex(obj), "a placeholder is written back as the shape it stands for");
  assert.throws(() => decode(hexBytes("ab4101 5b 01")), (e: unknown) => e instanceof DecodeError && e.kind === "length_too_large" && e.offset === 3);
});

test("out-of-band: large data travels as buffers, in index order", () => {
  const big = new Uint8Array(OOB_THRESHOLD).fill(7);
  const arr = new PyArray("d", new Uint8Array(OOB_THRESHOLD));
  const buffers: Uint8Array[] = [];
  const payload = encode([big, arr, new Uint8Array(10)], { bufferCallback: (b) => buffers.push(b) });
  assert.equal(buffers.length, 2);
  assert.ok(payload.length < 100);
  const back = decode(payload, { buffers }) as unknown[];
  assert.equal(back[0], buffers[0], "bytes come back as the caller's buffer, not a copy");
  assert.ok(back[1] instanceof PyArray && (back[1] as PyArray).typecode === "d");
  assert.throws(() => decode(payload), (e: unknown) => e instanceof DecodeError && e.kind === "missing_buffer");
  assert.throws(() => decode(payload, { buffers: [buffers[0], new Uint8Array(3)] }), (e: unknown) => e instanceof DecodeError && e.kind === "buffer_mismatch");
});

test("envelopes: sign, compress, rotate keys, max age; node:crypto and WebCrypto agree", async () => {
  const value = { items: Array.from({ length: 200 }, () => "abcdefghij") };
  const key = { secret: SECRET };
  const old = { secret: "an older secret of enough bytes", id: "old" };
  const sealed = encode(value, { key, compress: "lz4", timestamp: 1_700_000_000 });
  assert.equal(sealed[2], 0x31, "signed and compressed");
  const plain = encode(value);
  assert.ok(sealed.length < plain.length);
  const opened = decode(sealed, { keys: [old, key], now: 1_700_000_010, maxAge: 60 }) as Map<string, string[]>;
  assert.equal(opened.get("items")!.length, 200);
  const viaWebCrypto = await decodeAsync(sealed, { keys: [key], now: 1_700_000_010 });
  assert.deepEqual(viaWebCrypto, opened);
  assert.equal(toHex(await encodeAsync(value, { key, compress: "lz4", timestamp: 1_700_000_000 })), toHex(sealed));
  assert.throws(() => decode(sealed, { keys: [old] }), (e: unknown) => e instanceof SignatureError && e.kind === "unknown_key");
  const tampered = sealed.slice();
  tampered[tampered.length - 40] ^= 1;
  assert.throws(() => decode(tampered, { keys: [key] }), (e: unknown) => e instanceof SignatureError && e.kind === "bad_signature");
  assert.throws(() => decode(sealed, { keys: [key], now: 1_700_010_000, maxAge: 60 }), (e: unknown) => e instanceof SignatureError && e.kind === "expired");
  assert.throws(() => decode(plain, { keys: [key] }), (e: unknown) => e instanceof SignatureError && e.kind === "signature_required");
  assert.throws(() => encode(1, { key: { secret: "short" } }), RangeError);
});

test("streams: a reader fed one byte at a time finds the same messages", () => {
  const w = new StreamWriter();
  const values = [null, [1, 2], "x".repeat(300), new OrderedDict([["a", 1]]), new Fraction(1, 3), new Range(0, 10, 2)];
  for (const v of values) w.writePayload(encode(v));
  const stream = w.close();
  const reader = new StreamReader();
  const got: unknown[] = [];
  for (const b of stream) {
    reader.push(Uint8Array.of(b));
    for (const m of reader.messages()) got.push(m.value);
  }
  for (const m of reader.end()) got.push(m.value);
  assert.equal(got.length, values.length);
  assert.equal(toHex(encode(got)), toHex(encode(values)));
  const cut = new StreamReader();
  cut.push(stream.subarray(0, stream.length - 1));
  [...cut.messages()];
  assert.throws(() => cut.end(), (e: unknown) => e instanceof DecodeError && e.kind === "truncated" && e.messageIndex === values.length);
});

test("ints: number exactly while safe, bigint beyond, at every boundary and in packed lists", () => {
  const edges = [0n, 63n, 64n, -16n, -17n, 2n ** 53n - 1n, -(2n ** 53n) + 1n, 2n ** 53n, -(2n ** 53n), 2n ** 53n + 1n,
    -(2n ** 53n) - 1n, 2n ** 63n - 1n, -(2n ** 63n), 2n ** 63n, -(2n ** 63n) - 1n, 2n ** 64n, -(2n ** 200n)];
  for (const v of edges) {
    const want = v >= -(2n ** 53n) + 1n && v <= 2n ** 53n - 1n ? Number(v) : v;
    assert.equal(decode(encode(v)), want, `int ${v}`);
    assert.deepEqual(decode(encode([v, v, v, v])), [want, want, want, want], `packed ${v}`);
  }
  // -2^63 as the spec writes it: zigzag 2^64 - 1.
  assert.equal(decode(hexBytes("ab4101 6c ffffffffffffffffff01")), -(2n ** 63n));
});

test("hash flooding: ints chosen to share one V8 hash bucket are refused, honest ones pass", () => {
  // V8's unseeded hash of small ints (ComputeUnseededHash), to pick colliding keys.
  const h = (k: number) => {
    let x = k >>> 0;
    x = (~x + (x << 15)) >>> 0; x = (x ^ (x >>> 12)) >>> 0; x = (x + (x << 2)) >>> 0;
    x = (x ^ (x >>> 4)) >>> 0; x = Math.imul(x, 2057) >>> 0; x = (x ^ (x >>> 16)) >>> 0;
    return x & 0x3fffffff;
  };
  const colliding: number[] = [];
  for (let k = 0; colliding.length < 5000; k++) if ((h(k) & 0x3fff) === 0) colliding.push(k);
  const t0 = performance.now();
  assert.throws(() => decode(encode(new Set(colliding))), (e: unknown) => e instanceof DecodeLimitError && e.kind === "hash_limit");
  assert.throws(() => decode(encode(new Map(colliding.map((k) => [k, null])))), (e: unknown) => e instanceof DecodeLimitError && e.kind === "hash_limit");
  assert.ok(performance.now() - t0 < 2000, "refused early, not after the flood");
  const honest = new Set(Array.from({ length: 300_000 }, (_, i) => i * 7919 - 1_000_000));
  assert.equal((decode(encode(honest)) as Set<number>).size, honest.size);
});

test("hash flooding: floats and bigints chosen to share one V8 hash bucket are refused too", () => {
  // V8 hashes a non-int32 number by ComputeLongHash of its bits, and a bigint by that of its
  // magnitude's low 64 bits. Colliding floats: hashes with equal low bits, inverted back to
  // bits (each step of ComputeLongHash is a bijection on 64 bits).
  const M = (1n << 64n) - 1n;
  const inverse = (a: bigint) => { let x = a; for (let i = 0; i < 7; i++) x = (x * (2n - a * x)) & M; return x; };
  const unxorshift = (y: bigint, k: bigint) => { let x = y; for (let i = 0; i < 64; i++) x = y ^ (x >> k); return x; };
  const unhash = (h: bigint) => {
    h = unxorshift(h, 22n);
    h = (h * inverse(65n)) & M;
    h = unxorshift(h, 11n);
    h = (h * inverse(21n)) & M;
    h = unxorshift(h, 31n);
    return ((h + 1n) * inverse((1n << 18n) - 1n)) & M;
  };
  const view = new DataView(new ArrayBuffer(8));
  const floats: number[] = [];
  for (let i = 1n; floats.length < 3000; i++) {
    view.setBigUint64(0, unhash((i * 0x9e3779b97f4an) << 16n & M), true);
    const x = view.getFloat64(0, true);
    if (Number.isFinite(x) && !Number.isInteger(x)) floats.push(x);
  }
  const bigints = Array.from({ length: 3000 }, (_, i) => BigInt(i + 1) << 64n);
  const t0 = performance.now();
  for (const keys of [floats, bigints] as unknown[][]) {
    assert.throws(() => decode(encode(new Set(keys))), (e: unknown) => e instanceof DecodeLimitError && e.kind === "hash_limit");
    assert.throws(() => decode(encode(new Map(keys.map((k) => [k, null])))), (e: unknown) => e instanceof DecodeLimitError && e.kind === "hash_limit");
  }
  assert.ok(performance.now() - t0 < 2000, "refused early, not after the flood");
  const honestFloats = new Set(Array.from({ length: 100_000 }, (_, i) => i + 0.5 + Math.random() / 4));
  assert.equal((decode(encode(honestFloats)) as Set<number>).size, honestFloats.size);
  const honestBig = new Set(Array.from({ length: 100_000 }, (_, i) => (BigInt(i) << 64n) + BigInt(Math.floor(Math.random() * 2 ** 52))));
  assert.equal((decode(encode(honestBig)) as Set<bigint>).size, honestBig.size);
});

test("hash flooding: a RECORDS's keys share a hash class no more than a dict's of as many keys, whatever its row count", () => {
  // The keys of a RECORDS are one key set of `width` keys; its row count must not raise their
  // limit. Ints whose V8 hashes (ComputeUnseededHash) agree in their low 16 bits: one class.
  const h = (k: number) => {
    let x = k >>> 0;
    x = (~x + (x << 15)) >>> 0; x = (x ^ (x >>> 12)) >>> 0; x = (x + (x << 2)) >>> 0;
    x = (x ^ (x >>> 4)) >>> 0; x = Math.imul(x, 2057) >>> 0; x = (x ^ (x >>> 16)) >>> 0;
    return x & 0x3fffffff;
  };
  const colliding: number[] = [];
  for (let k = 64; colliding.length < 65; k++) if ((h(k) & 0xffff) === 0) colliding.push(k);
  const varint = (n: number) => {
    const out: number[] = [];
    for (; n >= 0x80; n = Math.floor(n / 128)) out.push((n & 0x7f) | 0x80);
    out.push(n);
    return out;
  };
  // Each key an INT (spec 5.3): tag 6c, then the zigzag of k >= 0 (2k) as a varint.
  const int = (k: number) => [0x6c, ...varint(2 * k)];
  // A RECORDS of `rows` rows: header, tag 7b, count, width, the keys, then one byte per row
  // value (so the length check of spec 5.12.1 step 5 passes), all SMALL_INT 0 when
  // `decodable`, else a reserved tag (7a) first: keys that pass then fail at the first value
  // instead of building every row.
  const records = (rows: number, keys: number[], decodable = false) => {
    const head = [0xab, 0x41, 0x01, 0x7b, ...varint(rows), ...varint(keys.length)];
    const offsets: number[] = [];
    for (const k of keys) { offsets.push(head.length); head.push(...int(k)); }
    const b = new Uint8Array(head.length + rows * keys.length);
    b.set(head);
    if (!decodable) b[head.length] = 0x7a;
    return { b, offsets, rowsAt: head.length };
  };
  // Each payload by the fast path and by the stack machine (tracing), which must agree.
  const refused = (b: Uint8Array, offset: number, what: string) => {
    const e = asTheMachine(b, {});
    assert.ok(e instanceof DecodeLimitError, `${what}: ${e}`);
    assert.equal(e.kind, "hash_limit", `${what}: ${e}`);
    assert.equal(e.offset, offset, `${what}: ${e}`);
  };
  const many = 131073; // 32 * ceil(many / 65536) = 96 > 64
  // 65 colliding keys: the 65th is refused, with many rows as with few, and as in a DICT.
  for (const rows of [many, 2]) {
    const { b, offsets } = records(rows, colliding);
    refused(b, offsets[64], `RECORDS of ${rows} rows`);
  }
  const dict = [0xab, 0x41, 0x01, 0x73, ...varint(colliding.length)];
  const dictOffsets: number[] = [];
  for (const k of colliding) { dictOffsets.push(dict.length); dict.push(...int(k), 0x90); }
  refused(new Uint8Array(dict), dictOffsets[64], "DICT");
  // 64 colliding keys pass: many rows fail only at their first value, few rows decode.
  const { b, rowsAt } = records(many, colliding.slice(0, 64));
  const e = asTheMachine(b, {});
  assert.ok(e !== null && e.kind === "unknown_tag" && e.offset === rowsAt, `${e}`);
  const few = decode(records(2, colliding.slice(0, 64), true).b) as Map<number, unknown>[];
  assert.equal(few.length, 2);
  assert.deepEqual([...few[1].keys()], colliding.slice(0, 64));
});

test("REFs resolve in large bodies too (beyond 16 MiB, and past many table growths)", () => {
  const shared = [1, 2];
  const big = new Uint8Array((1 << 24) + 10);
  const back = decode(encode([big, shared, shared])) as unknown[];
  assert.equal(back[1], back[2]);
  assert.equal((back[0] as Uint8Array).length, big.length);
});

test("canonical sortKeys orders dicts but not the dict inside an OrderedDict (spec 6.7)", () => {
  const od = new OrderedDict<string, number>([["b", 1], ["a", 2]]);
  const plain = new Map([["b", 1], ["a", 2]]);
  const back = decode(encode([od, plain], { canonical: true, sortKeys: true })) as [OrderedDict, Map<string, number>];
  assert.deepEqual([...back[0].keys()], ["b", "a"]);
  assert.deepEqual([...back[1].keys()], ["a", "b"]);
});

test("classes whose field lists join alike stay apart (a field name may hold a NUL)", () => {
  const two = new Placeholder("m", "C", "ATTRS", ["a", "b"], [1, 2]);
  const one = new Placeholder("m", "C", "ATTRS", ["a\u0000b"], [3]);
  const payload = encode([two, one, new Placeholder("m", "C", "ATTRS", ["a", "b"], [4, 5])]);
  const back = decode(payload, { placeholders: true }) as Placeholder[];
  assert.deepEqual(back.map((p) => p.fields), [["a", "b"], ["a\u0000b"], ["a", "b"]]);
  const plain = decode(payload, { placeholders: "plain" }) as Record<string, unknown>[];
  assert.deepEqual(plain.map((r) => Object.fromEntries(Object.entries(r))), [{ a: 1, b: 2 }, { "a\u0000b": 3 }, { a: 4, b: 5 }]);
});

test("dicts as objects: a __proto__ key is an own property, never the prototype", () => {
  const src = JSON.parse('[{"__proto__":1,"x":2},{"x":2,"__proto__":{"polluted":true}},{"a":1},{"a":2}]');
  const payload = encode(src);
  for (const placeholders of [true, "plain" as const]) {
    const back = decode(payload, { dicts: "object", placeholders }) as Record<string, unknown>[];
    assert.deepEqual(Object.keys(back[0]), ["__proto__", "x"]);
    assert.equal(Object.getPrototypeOf(back[1]), Object.prototype);
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
    assert.deepEqual(Object.keys(back[1]), ["x", "__proto__"]);
    assert.equal(toHex(encode(back)), toHex(payload));
  }
});

test("lone surrogates are found without String.prototype.isWellFormed too (Node 18)", () => {
  // Code units around and inside the surrogate range, in any order: pairs, lone halves of
  // either kind, halves at both ends of the string.
  const unit = fc.oneof(fc.integer({ min: 0xd7fe, max: 0xe001 }), fc.integer({ min: 0x20, max: 0x7e }));
  fc.assert(
    fc.property(fc.array(unit, { maxLength: 12 }), (units) => {
      const s = String.fromCharCode(...units);
      assert.equal(hasLoneSurrogateByPattern(s), !(s as string & { isWellFormed(): boolean }).isWellFormed());
    }),
    { numRuns: 20_000 },
  );
});

test("record dicts: keys read through the key trie give what the stack machine gives", () => {
  const both = [{ placeholders: true }, { placeholders: "plain" as const, dicts: "object" as const }];
  const agree = (payload: Uint8Array) => {
    for (const options of both) asTheMachine(payload, options);
  };
  const rec = { a: 1, b: "x".repeat(20), c: null };
  // Keys that a literal cannot take, after records that taught the trie their prefix.
  agree(encode([rec, rec, { a: 1, "0": 2 }, { a: 1, __proto__x: 2 }, rec]));
  agree(encode([rec, rec, new Map<unknown, unknown>([["a", 1], [5, 2], ["c", 3]]), rec]));
  agree(encode(JSON.parse('[{"a":1,"b":2},{"a":1,"__proto__":2},{"a":1,"b":2}]')));
  // Runs of one sequence (read by its generated reader), then dicts of as many keys that
  // differ at the first, a middle and the last key, and one cut short inside a key.
  const run = Array.from({ length: 5 }, () => ({ ...rec }));
  agree(encode([...run, { z: 1, b: 2, c: 3 }, { a: 1, z: 2, c: 3 }, { a: 1, b: 2, z: 3 }, { a: 1, b: 2, cc: 3 }, rec]));
  const full = encode([...run, rec]);
  for (let cut = full.length - 8; cut < full.length; cut++) {
    agree(full.subarray(0, cut));
    // The same body ending there inside a longer buffer (as in a stream): the bytes after
    // its end must not complete a key.
    for (const options of both) {
      const alone = (() => { try { decode(full.subarray(0, cut), options); } catch (e) { return e as DecodeError; } })();
      const inside = (() => { try { decodeBody(full, 3, cut, 3, options, 0, 1 << 30, 1 << 30); } catch (e) { return e as DecodeError; } })();
      assert.ok(alone instanceof DecodeError && inside instanceof DecodeError);
      assert.equal(inside.kind, alone.kind);
      assert.equal(inside.offset, alone.offset);
    }
  }
  // A duplicate key after a record of the same first key, written as short strs and as REFs.
  agree(hexBytes("ab4101 5a 62 4161 01 4162 02 62 4161 03 4161 04"));
  agree(hexBytes("ab4101 5a 62 c161 01 c162 02 62 9302 03 9302 04"));
  const mapped = decode(hexBytes("ab4101 5a 62 4161 01 4162 02 62 4161 03 4162 04"), { dicts: "object" });
  assert.deepEqual(mapped, [{ a: 1, b: 2 }, { a: 3, b: 4 }]);
  // A REF key names an offset of its own payload: the same bytes in the next payload may
  // name another str.
  const first = hexBytes("ab4101 5a 62 c161 01 c162 02 62 9302 03 9305 04");
  const second = hexBytes("ab4101 5a 62 c178 01 c162 02 62 9302 03 9305 04");
  for (const options of both) {
    decode(first, options);
    decode(first, options);
    const back = decode(second, options) as unknown[];
    const keys = back.map((d) => (d instanceof Map ? [...d.keys()] : Object.keys(d as object)));
    assert.deepEqual(keys, [["x", "b"], ["x", "b"]]);
  }
  // Class instances: placeholders and plain records, one with a field no literal can take,
  // one shared (tracked), one deeper than the fast path goes.
  const point = (x: unknown) => new Placeholder("geo", "Point", "ATTRS", ["x", "y"], [x, "y".repeat(14)]);
  const odd = new Placeholder("geo", "Odd", "ATTRS", ["__proto__", "z"], [1, 2]);
  const shared = point(3);
  let deep: unknown = point(4);
  for (let i = 0; i < 200; i++) deep = point(deep);
  agree(encode([point(1), point(2.5), odd, odd, shared, shared, point(null), deep]));
  // Many key sequences: the trie starts again when full, and values stay right.
  const many = Array.from({ length: 30000 }, (_, i) => ({ [`k${i}`]: i, same: i }));
  const back = decode(encode(many), { dicts: "object" }) as Record<string, number>[];
  assert.equal(back.length, many.length);
  back.forEach((o, i) => assert.deepEqual(Object.entries(o), [[`k${i}`, i], ["same", i]]));
});

test("records keys: a RECORDS whose keys repeat the bytes of the one before at its place gives what the machine gives", () => {
  const modes = [{ placeholders: true }, { placeholders: "plain" as const, dicts: "object" as const }];
  const agree = (payload: Uint8Array) => {
    for (const options of modes) assert.equal(asTheMachine(payload, options), null);
  };
  // Lists of labels at one place: the same keys (short strs, a STR of a one-byte and one of
  // a two-byte length), then keys that differ in one byte, in length or in number, then the
  // same again.
  const long = "k".repeat(30), longer = "q".repeat(200);
  const label = (i: number) => ({ id: i, name: `n${i}`, [long]: i % 3, [longer]: null });
  const labels = (i: number) => [label(i), label(i + 1)];
  // Made anew each time: an item met twice would be a REF's target (a Map, not a record).
  const items = () => Array.from({ length: 6 }, (_, i) => ({ n: i, labels: labels(i) }));
  const odd = (f: (l: Record<string, unknown>) => Record<string, unknown>) => ({ n: 9, labels: labels(9).map(f) });
  const rename = (from: string, to: string) => (l: Record<string, unknown>) => Object.fromEntries(Object.entries(l).map(([k, v]) => [k === from ? to : k, v]));
  const payload = encode([
    ...items(), odd(rename("name", "nama")), ...items(), odd(rename(long, long + "k")), odd(rename(longer, "q" + longer.slice(1, -1) + "r")),
    odd(({ id, name }) => ({ id, name })), ...items(),
  ]);
  assert.ok(toHex(payload).includes("7b0204"), "labels written as RECORDS");
  for (let round = 0; round < 2; round++) agree(payload);
  const back = decode(payload, modes[1]) as { labels: object[] }[];
  assert.deepEqual(back[6].labels.map((l) => Object.keys(l)), [["id", "nama", long, longer], ["id", "nama", long, longer]]);
  assert.deepEqual(back.at(-1)!.labels, labels(5));
  // Every allocation budget that runs out inside them, keys included: the same error at the
  // same offset as the machine's (a RECORDS whose keys' charge would pass the budget reads
  // them one by one).
  const objects = modes[1];
  budgetsBelowFailAsTheMachine(payload, objects, 6000, 3);
  for (let cut = payload.length - 400; cut < payload.length; cut++) {
    for (const options of modes) assert.notEqual(asTheMachine(payload.subarray(0, cut), options), null);
  }
  // Keys as Python writes them: tracked strs, then REFs to them (the second and third
  // RECORDS alike); tracked strs are never taken as before (each is a value to record: the
  // REF at the end is to the second RECORDS's key).
  const refs = hexBytes("ab4101 5b 7b0202 c161 c162 01 02 03 04 7b0202 9304 9306 05 06 07 08 7b0202 9304 9306 09 0a 0b 0c");
  agree(refs);
  assert.deepEqual(decode(refs, objects), [[{ a: 1, b: 2 }, { a: 3, b: 4 }], [{ a: 5, b: 6 }, { a: 7, b: 8 }], [{ a: 9, b: 10 }, { a: 11, b: 12 }]]);
  const tracked = hexBytes("ab4101 5b 7b0202 c161 c162 01 02 03 04 7b0202 c161 c162 05 06 07 08 930f");
  agree(tracked);
  assert.equal((decode(tracked, objects) as unknown[])[2], "a");
  // The same offsets holding other keys in the next payload.
  const other = hexBytes("ab4101 5b 7b0202 c178 c162 01 02 03 04 7b0202 9304 9306 05 06 07 08 7b0202 9304 9306 09 0a 0b 0c");
  assert.deepEqual(Object.keys((decode(other, objects) as object[][])[2][0]), ["x", "b"]);
});

test("record readers: dicts and short lists as values, read by the readers' own branches, at any depth, as the machine reads them", () => {
  // The generated readers read a SHORT_DICT value (object mode) and a SHORT_LIST value
  // themselves, up to the fast path's depth (128 levels), past it by the machine.
  const modes = [
    { placeholders: true }, { placeholders: "plain" as const, dicts: "object" as const }, { placeholders: "plain" as const },
    { placeholders: true, dicts: "object" as const },
  ];
  const agree = (value: unknown) => {
    const payload = encode(value);
    for (let round = 0; round < 2; round++) for (const options of modes) assert.equal(asTheMachine(payload, options), null);
  };
  const rec = (v: unknown) => ({ id: 1, v, w: [1, "a", null] });
  let deep: unknown = rec(null);
  for (let i = 0; i < 200; i++) deep = i % 3 === 0 ? rec([deep, 1]) : rec(i % 3 === 1 ? { v: deep, u: [1] } : [deep]);
  agree([rec({ a: 1 }), rec({ a: 2 }), rec([1, 2, 3]), rec([]), rec({}), deep]);
  // Far deeper than any call stack allows recursion (8000 levels of dicts the readers read,
  // outermost, then lists): the readers hand over at 128 levels.
  let deeper: unknown = null;
  for (let i = 0; i < 9000; i++) deeper = i >= 1000 || i % 2 === 0 ? { id: i, v: deeper } : { id: i, v: [deeper] };
  const far = encode([deeper, { id: 0, v: null }], { refs: false, maxDepth: 10000 });
  // Twice: the second decode starts with the readers the first made.
  for (const options of [...modes, ...modes]) {
    // (Compared by their encodings: a deep comparison would recurse as deep as they are.)
    const o = { ...options, maxDepth: 10000 };
    const again = (v: unknown) => toHex(encode(v, { refs: false, maxDepth: 10000 }));
    assert.equal(again(decode(far, o)), again(trace(far, o).events[0].value));
  }
  // As values of plain records and placeholders (a shape's readers), dicts as Maps too.
  const pt = (x: unknown) => new Placeholder("geo", "Pt", "ATTRS", ["x", "y"], [x, [1]]);
  let nested: unknown = pt(1);
  for (let i = 0; i < 200; i++) nested = pt(i % 2 === 0 ? new Map([["k", nested]]) : [nested]);
  agree([pt(new Map([["k", 1]])), pt(new Map<string, unknown>([["k", 2], ["j", [3]]])), nested]);
  // Cut anywhere inside them: the same error at the same offset.
  const payload = encode([rec({ a: 1, b: [1, 2] }), rec({ a: 2, b: [3] }), rec({ a: 3, b: [4, 5, 6] })]);
  for (let cut = 3; cut < payload.length; cut++) {
    for (const options of modes) assert.notEqual(asTheMachine(payload.subarray(0, cut), options), null);
  }
});

test("long strs: made by the native decoder, valid or not, as the machine makes them", () => {
  const modes = [{}, { placeholders: "plain" as const, dicts: "object" as const }];
  const strs = ["a".repeat(255), "b".repeat(256), "c".repeat(5000), "é".repeat(200), "x".repeat(300) + "\u{1F600}", "\uFFFD".repeat(100)];
  const payload = encode([...strs, { k: strs[2] }]);
  for (const options of modes) assert.equal(asTheMachine(payload, options), null);
  assert.deepEqual(decode(payload), [...strs, new Map([["k", strs[2]]])]);
  // A STR of 300 bytes whose byte 290 (a lone continuation byte, an overlong form, a
  // surrogate) is not UTF-8: refused at its first byte (8), as the machine refuses it.
  for (const bad of ["80", "c0af", "eda080"]) {
    const body = "61".repeat(290) + bad + "61".repeat(10 - bad.length / 2);
    const b = hexBytes(`ab4101 5a 01 68ac02 ${body}`);
    for (const options of modes) {
      const e = asTheMachine(b, options);
      assert.equal(e?.kind, "invalid_utf8", bad);
      assert.equal(e?.offset, 8, bad);
    }
  }
});

test("short str cache: repeats, near misses, collisions and later payloads give what the machine gives", () => {
  const modes = [{ placeholders: true }, { placeholders: "plain" as const, dicts: "object" as const }];
  // Every length the cache takes (1 to 12) and one beyond, strs that differ only in their
  // last byte, in a trailing NUL (the words are zero past the length) or in length, and
  // non-ASCII ones; each twice, the second read from the cache.
  const near: string[] = [];
  for (let n = 1; n <= 13; n++) {
    const s = "abcdefghijklm".slice(0, n);
    near.push(s, s.slice(0, -1) + "z", s + "\u0000", s.slice(0, -1) + "\u0000", "é".repeat(Math.ceil(n / 2)));
  }
  const values = [...near, ...near];
  // More distinct strs than the cache has slots (each slot is then taken by several), then
  // all of them again; and a run at the body's end, where fewer than 12 bytes are left.
  const many = Array.from({ length: 6000 }, (_, i) => `s${i.toString(36)}`);
  const payloads = [encode(values), encode([...many, ...many]), encode(["x", "ab", "abc", "x"]), encode([...values, "q", "q"])];
  // As record values too, which the generated readers read.
  payloads.push(encode(values.map((v, i) => ({ id: i, v, w: "k" }))));
  for (let round = 0; round < 2; round++) {
    for (const payload of payloads) {
      for (const options of modes) assert.equal(asTheMachine(payload, options), null);
    }
  }
  assert.deepEqual(decode(payloads[0]), values);
  assert.deepEqual(decode(payloads[1]), [...many, ...many]);
  // The same offsets holding other strs of the same lengths in the next payload.
  const swapped = values.map((s) => (s.length > 0 && s.charCodeAt(0) < 0x80 ? "Q" + s.slice(1) : s));
  assert.deepEqual(decode(encode(swapped)), swapped);
  assert.deepEqual(decode(payloads[0]), values);
  // A payload of distinct strs first (the cache stops looking for it), repeats after.
  const late = [...many.slice(0, 1000), ...near, ...near];
  for (const options of modes) assert.equal(asTheMachine(encode(late), options), null);
});

test("record readers: every value they read inline, and every value that leaves them, as the machine reads it", () => {
  // Values the generated readers take themselves (small and SMALL_NEG ints, None, bools,
  // INTs of one and two varint bytes, non-integral FLOAT64s, SHORT_STRs, STRs of a one-byte
  // length) and those they hand on (longer INTs, ints beyond 2^53, FLOAT32s, integral and NaN floats,
  // STRs of a two-byte length, containers).
  const values: unknown[] = [
    0, 63, -16, null, true, false, 64, -65, 8191, -8192, 8192, 1 << 20, -(2 ** 31), 2 ** 53 - 1, 2n ** 53n + 1n, -(2n ** 63n),
    0.1, -2.7, 1.5, new Float(2), new Float(NaN), "", "abc", "é", "x".repeat(23), "y".repeat(24), "z".repeat(127), "w".repeat(128),
    "ü".repeat(40), [1, "a"], new Map([["k", 1]]), new Tuple(1, 2),
  ];
  // "after": another value, unless it is an object (one written twice is a REF's target).
  const after = (i: number) => { const v = values[(i + 7) % values.length]; return typeof v === "object" && v !== null ? i : v; };
  const records = values.map((v, i) => new Map<string, unknown>([["id", i], ["value", v], ["after", after(i)]]));
  const payload = encode(records);
  const expect = (options: object) => asTheMachine(payload, options);
  const objects = { placeholders: "plain" as const, dicts: "object" as const };
  // Twice: the first decode makes the readers, the second starts with them.
  for (let i = 0; i < 2; i++) assert.equal(expect(objects), null);
  const back = decode(payload, objects) as { value: unknown }[];
  back.forEach((r, i) => {
    const v = values[i];
    if (v instanceof Float && Number.isNaN(v.value)) assert.ok(r.value instanceof Float && Number.isNaN(r.value.value));
    else assert.deepStrictEqual(r.value, v instanceof Map ? Object.fromEntries(v) : v);
  });
  // Every allocation budget that runs out inside the records: the same error, at the same
  // offset, as the machine's (the readers charge as they go).
  budgetsBelowFailAsTheMachine(payload, objects, 3000, 7, 1 << 20);
  // Keys of STRs (24 bytes and more, a one- and a two-byte length) and of three bytes and
  // fewer, in runs read by a reader, then keys that differ from them in their first, a
  // middle and their last byte, or in their length.
  const long = "k".repeat(30), longer = "é".repeat(100);
  const run = (n: number) => Array.from({ length: n }, (_, i) => ({ [long]: i, ab: "x", [longer]: -i - 1 }));
  const off = (k: string, at: number) => k.slice(0, at) + "q" + k.slice(at + 1);
  const others: [string, string][] = [
    [long, off(long, 0)], [long, off(long, 15)], [long, off(long, 29)], [long, long + "k"], [long, long.slice(1)],
    [longer, off(longer, 50)], [longer, off(longer, 99)], ["ab", "ac"],
  ];
  for (const [key, other] of others) {
    const odd = run(3).map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k === key ? other : k, v])));
    const mixed = [...run(4), odd[0], ...run(2), odd[1]];
    for (let i = 0; i < 2; i++) assert.equal(asTheMachine(encode(mixed), objects), null);
    assert.deepStrictEqual(decode(encode(mixed), objects), mixed);
  }
  // An INT of a non-canonical varint (a trailing zero byte) inside a run of records: refused
  // where the machine refuses it.
  const rec = (v: string) => `63 4161 01 4162 ${v} 4163 02`;
  for (const bad of ["6c8000", "6c808000", "6c8180808000"]) {
    const body = hexBytes(`ab4101 7104 ${rec("6c02")} ${rec("6c8101")} ${rec(bad)} ${rec("01")}`);
    for (let i = 0; i < 2; i++) {
      const e = (() => { try { decode(body, objects); } catch (x) { return x as DecodeError; } })();
      assert.ok(e instanceof DecodeError && e.kind === "overlong_varint", `${bad}: ${String(e)}`);
      assert.equal(e.offset, trace(body, objects).error?.offset);
    }
  }
});
