// The reference encoder (spec sections 5 and 6): the forms it prescribes, the memo that writes
// shared objects once and then as REF, SUPERSEDE for cycles through built-after values (found
// by a first pass), packed lists and tuple lists, canonical mode (spec 6.7), and the envelope.

import { EncodeError } from "./errors.js";
import { hasLoneSurrogate, encodeUtf8Surrogates, writeUtf8 } from "./utf8.js";
import { zigzag, zigzagBig } from "./varint.js";
import { Tuple, FrozenSet, ByteArray, Complex, Float, Placeholder, CLASS, PySingleton, creationOf, type ObjectKind, OBJECT_KINDS } from "./types.js";
import { ExtBlobValue, ExtCode } from "./ext/base.js";
import { PyArray } from "./ext/array.js";
import { NDArray } from "./ext/ndarray.js";
import { AmberDateTime } from "./ext/datetime.js";
import { Deque, Namespace, OrderedDict, Counter, DefaultDict, Fraction, Range, Slice } from "./ext/composite.js";
import { OOB_THRESHOLD, outOfBandBlob } from "./ext/out_of_band.js";
import { type AllowedClass, type ClassInfo, valueCount } from "./object.js";
import { DEFAULT_MAX_DEPTH, HARD_MAX_DEPTH } from "./decode.js";
import { seal, sealAsync, type SealOptions } from "./seal.js";

export interface EncodeOptions extends SealOptions {
  /** Write shared objects once and then as REF (default true). With false, cycles are errors. */
  refs?: boolean;
  /** Canonical mode (spec 6.7): equal values give identical bytes. */
  canonical?: boolean;
  /** With canonical: order dict entries by their keys' canonical encodings. */
  sortKeys?: boolean;
  /** Deepest nesting written; default 1000, at most 10000. */
  maxDepth?: number;
  /** Receives the out-of-band buffers (data of 1 MiB or more), in index order. */
  bufferCallback?: (buffer: Uint8Array) => void;
  /** Classes written as OBJECT, matched by their prototype. */
  types?: readonly AllowedClass[];
}

const I64_MIN = -(1n << 63n);
const I64_MAX = (1n << 63n) - 1n;
const f64 = new Float64Array(1);
const f64bytes = new Uint8Array(f64.buffer);
const f32 = new Float32Array(1);
const f32bytes = new Uint8Array(f32.buffer);
const f64view = new DataView(new ArrayBuffer(8));

/** A value of ARRAY typecode for each JS typed array class. */
const TYPED_ARRAY_CODES: [Function, string][] = [
  [Int8Array, "b"], [Uint8ClampedArray, "B"], [Int16Array, "h"], [Uint16Array, "H"], [Int32Array, "i"],
  [Uint32Array, "I"], [Float32Array, "f"], [Float64Array, "d"], [BigInt64Array, "q"], [BigUint64Array, "Q"],
];

const isIntNumber = (x: number) => Number.isSafeInteger(x) && !Object.is(x, -0);

/** True when a JS value is written as a float (spec 5.5). */
function isFloatValue(v: unknown): boolean {
  return (typeof v === "number" && !isIntNumber(v)) || v instanceof Float;
}
function floatOf(v: number | Float): number {
  return typeof v === "number" ? v : v.value;
}
function fitsFloat32(x: number): boolean {
  return x === x && Object.is(Math.fround(x), x);
}

/** The tuples and Floats that more than one place of the graph holds (spec 5.10.1 rule 3: the
 * items that could be shared, so that a list holding one is not packed or written as rows).
 * Found once, lazily, by a walk over every distinct container. */
function countHolders(root: unknown, enc: Encoder): Set<object> {
  // Each object is added to `walked` when first met; Set.add leaves the size as it was for
  // one met before. One table operation per object, where has-then-add took two.
  const walked = new Set<object>();
  const twice = new Set<object>();
  const stack: object[] = [];
  const hold = (v: unknown): void => {
    if (typeof v !== "object" || v === null) return;
    const size = walked.size;
    walked.add(v);
    if (walked.size !== size) {
      if (!(v instanceof Float)) stack.push(v);
    } else {
      // Met again: shared. (Only tuples, floats, dicts and instances are ever asked about.)
      twice.add(v);
    }
  };
  hold(root);
  while (stack.length) {
    const v = stack.pop()!;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) hold(v[i]);
    } else if (v instanceof Map) {
      for (const [k, x] of v) { hold(k); hold(x); }
    } else if (v instanceof Set) {
      for (const x of v) hold(x);
    } else if (v instanceof Placeholder) {
      for (const x of v.values) hold(x);
    } else if (v instanceof Deque) {
      for (const x of v.items) hold(x);
    } else if (v instanceof Slice) {
      hold(v.start); hold(v.stop); hold(v.step);
    } else if (!(v instanceof ExtBlobValue || ArrayBuffer.isView(v) || v instanceof Complex || v instanceof Float || v instanceof Fraction || v instanceof Range)) {
      const proto = Object.getPrototypeOf(v);
      if (proto === Object.prototype || proto === null || enc.isRegistered(proto)) {
        for (const k of Object.keys(v)) hold((v as Record<string, unknown>)[k]);
      }
    }
  }
  return twice;
}

/** The str keys of a dict that may be a row of a RECORDS: an exact Map of str keys, or a plain
 * object (not a registered class's instance), in order; else null. */
function dictKeys(v: unknown): string[] | null {
  if (typeof v !== "object" || v === null) return null;
  const proto = Object.getPrototypeOf(v);
  if (proto === Map.prototype) {
    const keys: string[] = [];
    for (const k of (v as Map<unknown, unknown>).keys()) {
      if (typeof k !== "string") return null;
      keys.push(k);
    }
    return keys;
  }
  if ((proto === Object.prototype || proto === null) && (v as Record<symbol, unknown>)[CLASS] === undefined) {
    return Object.keys(v);
  }
  return null;
}

/** The value of key `k` of a row that `dictKeys` accepted. */
function recordValue(row: object, k: string): unknown {
  return row instanceof Map ? row.get(k) : (row as Record<string, unknown>)[k];
}

/** An instance written as an ATTRS OBJECT: its class's names, its fields and their values. */
interface AttrsInstance {
  module: string;
  qualname: string;
  fields: readonly string[];
  values: readonly unknown[];
}

/** A list written as object rows (spec 5.17.9): the shape, each row's values (read once,
 * when the list was found to fit: code run while writing cannot make a row misfit) and the
 * float columns' field indexes, increasing. */
interface RowsPlan {
  instances: readonly unknown[];
  module: string;
  qualname: string;
  fields: readonly string[];
  rows: (readonly unknown[])[];
  columns: number[];
}

/** Whether `common` writes `v` as something else than an instance of its class, whatever
 * types says: the kinds it tests before the allowed classes. */
function writtenAsBuiltin(v: object): boolean {
  return Array.isArray(v) || v instanceof Map || v instanceof Set || ArrayBuffer.isView(v) || v instanceof Float ||
    v instanceof Complex || v instanceof ExtBlobValue || v instanceof Placeholder || v instanceof Deque ||
    v instanceof Fraction || v instanceof Range || v instanceof Slice || v instanceof Date || v instanceof FreshList ||
    v instanceof PySingleton;
}

function sameFields(a: readonly string[], b: readonly string[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

class Encoder {
  // Every field is set by init(), which the reused encoder runs again for each encode.
  out: Uint8Array = NO_OUTPUT;
  pos = 3;
  options!: EncodeOptions;
  private root: unknown;
  private refs!: boolean;
  private canonical!: boolean;
  private sortKeys!: boolean;
  private maxDepth!: number;
  private depth = 0;
  private memo!: Map<object, number> | null;
  /** Objects being written, for cycle detection without refs. */
  private active!: Set<object> | null;
  private path: (string | number)[] = [];
  private shapes: Map<string, number> | null = null;
  /** The shapes written last, found by the identity of their fields array (and their names):
   * a payload of records writes a few classes over and over, and making the string key of
   * every object took a third of the time of such payloads. */
  private recentShapes: { module: string; qualname: string; kind: ObjectKind; fields: readonly string[] | null; n: number }[] = [];
  /** Built-after occurrences, numbered in the order they start. */
  private occurrence = 0;
  /** Built-after occurrences found to be copies (spec 6.5), once there is one. */
  copies: Set<number> | null = null;
  private supersede!: ReadonlySet<number>;
  private holders: Set<object> | null = null;
  buffers: Uint8Array[] = [];
  private typesByProto: Map<object, AllowedClass> | null = null;
  /** GLOBAL placeholders by name: the first met stands for all (one class, one object). */
  private globalNames: Map<string, Placeholder> | null = null;
  /** GLOBAL entries of types: the allowed objects themselves. */
  private globals: Map<unknown, AllowedClass> | null = null;

  constructor(options: EncodeOptions, root: unknown, supersede: ReadonlySet<number>) {
    this.init(options, root, supersede);
  }

  /** Sets every field for an encode of `root`; the output buffer is kept when it is at most
   * MAX_KEPT_OUT (a small payload would otherwise pay for a new one, a large one for its
   * growth), so that one large encode does not hold its memory for good. */
  init(options: EncodeOptions, root: unknown, supersede: ReadonlySet<number>): void {
    this.options = options;
    this.root = root;
    this.refs = options.refs ?? true;
    this.canonical = options.canonical ?? false;
    this.sortKeys = options.sortKeys ?? false;
    this.maxDepth = options.maxDepth ?? DEFAULT_MAX_DEPTH;
    this.depth = 0;
    this.memo = this.refs ? new Map() : null;
    this.active = this.refs ? null : new Set();
    this.path = [];
    this.shapes = null;
    this.recentShapes = [];
    this.occurrence = 0;
    this.copies = null;
    this.supersede = supersede;
    this.holders = null;
    this.buffers = [];
    this.typesByProto = null;
    this.globalNames = null;
    this.globals = null;
    if (this.out.length === 0 || this.out.length > MAX_KEPT_OUT) this.out = new Uint8Array(256);
    this.out[0] = 0xab;
    this.out[1] = 0x41;
    this.out[2] = 0x01;
    this.pos = 3;
    if (options.types?.length) {
      this.typesByProto = new Map();
      for (const t of options.types) {
        if (!t.cls) continue;
        if (t.kind === "GLOBAL") (this.globals ??= new Map()).set(t.cls, t);
        else this.typesByProto.set(t.cls.prototype, t);
      }
    }
  }

  fail(message: string): never {
    let p = "root";
    for (const seg of this.path) p += typeof seg === "number" ? `[${seg}]` : `[${JSON.stringify(seg)}]`;
    throw new EncodeError(message, p);
  }

  private ensure(n: number): void {
    if (this.pos + n > this.out.length) {
      let size = this.out.length * 2;
      while (this.pos + n > size) size *= 2;
      const bigger = new Uint8Array(size);
      bigger.set(this.out.subarray(0, this.pos));
      this.out = bigger;
    }
  }

  private byte(b: number): void {
    this.ensure(1);
    this.out[this.pos++] = b;
  }

  private varint(v: number | bigint): void {
    this.ensure(10);
    const out = this.out;
    if (typeof v === "number") {
      if (v < 0x80000000) {
        // Below 2^31: shifts, no float division.
        while (v >= 128) {
          out[this.pos++] = (v & 0x7f) | 0x80;
          v >>>= 7;
        }
        out[this.pos++] = v;
        return;
      }
      while (v >= 128) {
        out[this.pos++] = (v % 128) | 0x80;
        v = Math.floor(v / 128);
      }
      out[this.pos++] = v;
      return;
    }
    if (v < 0x10000000000000000n) {
      // A 64-bit code: its 7-bit groups from the two 32-bit halves, no BigInt arithmetic.
      f64view.setBigUint64(0, v, true);
      let lo = f64view.getUint32(0, true), hi = f64view.getUint32(4, true);
      while (hi !== 0 || lo >= 128) {
        out[this.pos++] = (lo & 0x7f) | 0x80;
        lo = ((lo >>> 7) | ((hi & 0x7f) << 25)) >>> 0;
        hi >>>= 7;
      }
      out[this.pos++] = lo;
      return;
    }
    while (v >= 128n) {
      out[this.pos++] = Number(v & 0x7fn) | 0x80;
      v >>= 7n;
    }
    out[this.pos++] = Number(v);
  }

  private raw(b: Uint8Array): void {
    this.ensure(b.length);
    this.out.set(b, this.pos);
    this.pos += b.length;
  }

  private enter(levels = 1): void {
    this.depth += levels;
    if (this.depth > this.maxDepth) this.fail(`nesting deeper than max_depth=${this.maxDepth}`);
  }

  /** The body offset of the next byte. */
  private get here(): number {
    return this.pos - 3;
  }

  private writeRef(target: number): void {
    this.out[target + 3] |= 0x80;
    this.byte(0x93);
    this.varint(target);
  }

  // ---- scalars ----

  private int(v: number | bigint): void {
    if (typeof v === "number") {
      if (v >= -16 && v <= 63) {
        this.byte(v < 0 ? v + 0x90 : v);
        return;
      }
      this.byte(0x6c);
      this.varint(zigzag(v));
      return;
    }
    if (v >= -16n && v <= 63n) {
      this.int(Number(v));
      return;
    }
    if (v >= I64_MIN && v <= I64_MAX) {
      this.byte(0x6c);
      this.varint(zigzagBig(v));
      return;
    }
    // BIGINT: the smallest n with -2^(8n-1) <= v < 2^(8n-1).
    const bits = (v >= 0n ? v : -v - 1n).toString(2).length;
    const n = Math.floor(bits / 8) + 1;
    this.byte(0x6d);
    this.varint(n);
    this.ensure(n);
    let u = v < 0n ? (1n << BigInt(8 * n)) + v : v;
    for (let i = 0; i < n; i++) {
      this.out[this.pos++] = Number(u & 0xffn);
      u >>= 8n;
    }
  }

  private float(x: number, nanBits: Uint8Array | null): void {
    if (fitsFloat32(x)) {
      f32[0] = x;
      this.ensure(5);
      this.out[this.pos++] = 0x6f;
      this.out.set(f32bytes, this.pos);
      this.pos += 4;
      return;
    }
    this.ensure(9);
    this.out[this.pos++] = 0x6e;
    if (nanBits !== null) this.out.set(nanBits, this.pos);
    else {
      f64[0] = x;
      this.out.set(f64bytes, this.pos);
    }
    this.pos += 8;
  }

  private str(s: string): void {
    const n = s.length;
    if (n <= 23 && n > 7) {
      // A SHORT_STR when it is ASCII, written as it is checked; else the general way below.
      this.ensure(24);
      const out = this.out, start = this.pos;
      let i = 0;
      for (; i < n; i++) {
        const c = s.charCodeAt(i);
        if (c >= 0x80) break;
        out[start + 1 + i] = c;
      }
      if (i === n) {
        out[start] = 0x40 + n;
        this.pos = start + 1 + n;
        return;
      }
    }
    if (n <= 7) {
      // At most 21 UTF-8 bytes: a SHORT_STR, unless it holds a lone surrogate.
      this.ensure(22);
      const start = this.pos;
      const out = this.out;
      let p = start + 1;
      for (let i = 0; i < n; i++) {
        const c = s.charCodeAt(i);
        if (c < 0x80) out[p++] = c;
        else {
          if (hasLoneSurrogate(s)) return this.strSurrogates(s);
          p = start + 1 + writeUtf8(s, out, start + 1);
          break;
        }
      }
      out[start] = 0x40 + (p - start - 1);
      this.pos = p;
      return;
    }
    if (hasLoneSurrogate(s)) return this.strSurrogates(s);
    const max = 3 * n;
    const lenSize = max < 128 ? 1 : max < 16384 ? 2 : max < 2097152 ? 3 : 5;
    this.ensure(1 + lenSize + max);
    const start = this.pos;
    const written = writeUtf8(s, this.out, start + 1 + lenSize);
    if (written <= 23) {
      this.out.copyWithin(start + 1, start + 1 + lenSize, start + 1 + lenSize + written);
      this.out[start] = 0x40 + written;
      this.pos = start + 1 + written;
      return;
    }
    this.out[start] = 0x68;
    let need = 1;
    for (let v = written; v >= 128; v = Math.floor(v / 128)) need++;
    if (need !== lenSize) this.out.copyWithin(start + 1 + need, start + 1 + lenSize, start + 1 + lenSize + written);
    this.pos = start + 1;
    this.varint(written);
    this.pos = start + 1 + need + written;
  }

  private strSurrogates(s: string): void {
    const b = encodeUtf8Surrogates(s);
    this.byte(0x69);
    this.varint(b.length);
    this.raw(b);
  }

  // ---- the walk ----

  /** The memo rule for an object at its first meeting: whether it keeps identity here. */
  private memoizable(v: object): boolean {
    if (!this.canonical) return true;
    // Canonical mode writes immutable values by value (spec 6.7 rule 1).
    if (v instanceof Tuple || v instanceof FrozenSet || v instanceof Float || v instanceof Complex) return false;
    if (v instanceof Uint8Array) return v instanceof ByteArray;
    if (v instanceof ExtBlobValue) return v instanceof PyArray || v instanceof NDArray;
    if (v instanceof Fraction || v instanceof Range || v instanceof Slice) return false;
    if (v instanceof Placeholder) return v.kind !== "TUPLE_FIELDS";
    if (v instanceof Date) return false;
    const t = this.typesByProto?.get(Object.getPrototypeOf(v));
    if (t) return t.kind !== "TUPLE_FIELDS";
    return true;
  }

  value(v: unknown): void {
    switch (typeof v) {
      case "string":
        this.str(v);
        return;
      case "number":
        if (v >= 0 && v <= 63 && (v | 0) === v && !Object.is(v, -0)) {
          // SMALL_INT, the commonest number, without the general int path.
          this.ensure(1);
          this.out[this.pos++] = v;
        } else if (isIntNumber(v)) this.int(v);
        else this.float(v, null);
        return;
      case "boolean":
        this.byte(v ? 0x92 : 0x91);
        return;
      case "bigint":
        this.int(v);
        return;
      case "object":
        if (v === null) {
          this.byte(0x90);
          return;
        }
        if (this.depth >= deepFrom) this.deep(v);
        else this.object(v);
        return;
      default:
        this.fail(`cannot write a value of type ${typeof v}`);
    }
  }

  private object(v: object): void {
    const proto = Object.getPrototypeOf(v);
    // Maps, arrays and plain objects, the bulk of most graphs, skip the tests of the rare
    // classes; the tests of the others keep their order (subclasses first).
    if (proto === Map.prototype || proto === Array.prototype || proto === Object.prototype) return this.common(v, proto);
    if (v instanceof PySingleton) return this.singleton(v);
    if (v instanceof Placeholder && v.kind === "GLOBAL") v = this.globalPlaceholder(v);
    return this.common(v, proto);
  }

  /** One object each, like None: written in full every time, never memoized (spec 6.4). */
  private singleton(v: PySingleton): void {
    this.ensure(4);
    this.out[this.pos++] = 0x76;
    this.out[this.pos++] = ExtCode.SINGLETON;
    this.out[this.pos++] = 1;
    this.out[this.pos++] = v.byte;
  }

  /** A GLOBAL is the named object itself, one per name in the host (as enum members are), so
   * placeholders of one name are written as one object: the first met. */
  private globalPlaceholder(v: Placeholder): Placeholder {
    const key = `${v.module}:${v.qualname}`;
    const names = (this.globalNames ??= new Map());
    const first = names.get(key);
    if (first === undefined) names.set(key, v);
    return first ?? v;
  }

  /** Any object but a singleton, and with GLOBAL placeholders made one per name. */
  private common(v: object, proto: object | null): void {
    const memo = this.memo;
    if (memo !== null) {
      const target = memo.get(v);
      if (target !== undefined) {
        this.writeRef(target);
        return;
      }
    }
    const useMemo = memo !== null && this.memoizable(v);
    if (this.active !== null) {
      if (this.active.has(v)) this.fail("cycle detected");
    }
    // Kinds in the order their classes must be tested (subclasses first).
    if (Array.isArray(v)) {
      if (v instanceof Tuple) return this.builtAfter(v, useMemo && v.length > 0, () => this.tuple(v));
      this.begin(v, useMemo);
      this.list(v);
      if (this.active !== null) this.active.delete(v);
      return;
    }
    if (proto === Map.prototype) {
      this.begin(v, useMemo);
      this.dict(v as Map<unknown, unknown>, this.sortKeys);
      if (this.active !== null) this.active.delete(v);
      return;
    }
    if (proto === Placeholder.prototype) {
      const p = v as Placeholder;
      return this.instance(v, useMemo, p.module, p.qualname, p.kind, p.fields, p.values);
    }
    // Plain objects (the usual JS records and dicts) before the long chain of class tests.
    if ((proto === Object.prototype || proto === null) && (v as Record<symbol, unknown>)[CLASS] !== undefined) {
      const info = (v as Record<symbol, ClassInfo>)[CLASS];
      const rec = v as Record<string, unknown>;
      const fields = info.fields ?? [];
      this.begin(v, useMemo);
      this.objectValue(info.module, info.qualname, "ATTRS", fields, fields.map((f) => rec[f]));
      if (this.active !== null) this.active.delete(v);
      return;
    }
    if (proto === Object.prototype || proto === null) {
      this.begin(v, useMemo);
      this.plainObject(v as Record<string, unknown>);
      if (this.active !== null) this.active.delete(v);
      return;
    }
    if (v instanceof Uint8Array) {
      if (v instanceof ByteArray) return this.scalar(v, useMemo, () => this.bytes(v, 0x6b, 1));
      return this.scalar(v, useMemo && v.length > 0, () => this.bytes(v, 0x6a, 0));
    }
    if (v instanceof Float) return this.scalar(v, useMemo, () => this.float(v.value, v.nanBits));
    if (v instanceof Map) {
      if (v instanceof OrderedDict || v instanceof Counter || v instanceof DefaultDict || v instanceof Namespace) {
        return this.createdFirst(v, useMemo, () => this.mapComposite(v));
      }
      this.begin(v, useMemo);
      this.dict(v, this.sortKeys && !(v instanceof FreshDict));
      if (this.active !== null) this.active.delete(v);
      return;
    }
    if (v instanceof Set) {
      if (v instanceof FrozenSet) return this.builtAfter(v, useMemo, () => this.set(v, 0x75));
      return this.createdFirst(v, useMemo, () => this.set(v, 0x74));
    }
    if (v instanceof Complex) {
      return this.scalar(v, useMemo, () => {
        this.ensure(17);
        this.out[this.pos++] = 0x70;
        const dv = new DataView(this.out.buffer, this.pos, 16);
        dv.setFloat64(0, v.re, true);
        dv.setFloat64(8, v.im, true);
        this.pos += 16;
      });
    }
    if (v instanceof ExtBlobValue) return this.scalar(v, useMemo, () => this.extBlob(v));
    if (v instanceof Placeholder) return this.instance(v, useMemo, v.module, v.qualname, v.kind, v.fields, v.values);
    if (v instanceof Deque) return this.createdFirst(v, useMemo, () => this.composite(ExtCode.DEQUE, [v.maxlen, new FreshList(v.items)]));
    if (v instanceof Fraction) return this.builtAfter(v, useMemo, () => this.composite(ExtCode.FRACTION, [v.numerator, v.denominator]));
    if (v instanceof Range) return this.builtAfter(v, useMemo, () => this.composite(ExtCode.RANGE, [v.start, v.stop, v.step]));
    if (v instanceof Slice) return this.builtAfter(v, useMemo, () => this.composite(ExtCode.SLICE, [v.start, v.stop, v.step]));
    if (v instanceof Date) return this.scalar(v, false, () => this.extBlob(jsDate(v, this)));
    if (ArrayBuffer.isView(v)) {
      const code = TYPED_ARRAY_CODES.find(([cls]) => v instanceof cls);
      if (!code) this.fail(`cannot write a ${v.constructor.name}`);
      const data = new Uint8Array(v.buffer, v.byteOffset, v.byteLength).slice();
      return this.createdFirst(v, useMemo, () => this.extBlob(new PyArray(code[1], data)));
    }
    if (v instanceof FreshList) return this.list(v.items);
    const allowed = this.typesByProto?.get(proto);
    if (allowed) return this.classInstance(v, allowed, useMemo);
    const global = this.globals?.get(v);
    if (global) {
      const [module, qualname] = splitName(global.name);
      return this.instance(v, useMemo, module, qualname, "GLOBAL", null, []);
    }
    this.fail(`cannot write an instance of ${(v as object).constructor?.name ?? "an unknown class"} (not in types)`);
  }

  /** A created-first object: memoized before its children are written (spec 6.4 rule 4). */
  private begin(v: object, useMemo: boolean): void {
    if (useMemo) this.memo!.set(v, this.here);
    if (this.active !== null) this.active.add(v);
  }

  private scalar(v: object, useMemo: boolean, write: () => void): void {
    const at = this.here;
    write();
    if (useMemo) this.memo!.set(v, at);
  }

  private createdFirst(v: object, useMemo: boolean, write: () => void): void {
    if (useMemo) this.memo!.set(v, this.here);
    if (this.active !== null) {
      this.active.add(v);
      write();
      this.active.delete(v);
      return;
    }
    write();
  }

  /**
   * A built-after value (spec 6.4 rule 5, 6.5): occurrences are numbered in the order they
   * start, a copy found on the first pass is wrapped in SUPERSEDE, and the real one is memoized
   * where the decoder records it: when complete, or, for an object made from its first value,
   * when `write` calls `recorded` after that value.
   */
  private builtAfter(v: object, useMemo: boolean, write: (recorded: () => void) => void): void {
    const n = this.occurrence++;
    const copy = this.supersede.has(n);
    if (copy) {
      this.enter();
      this.byte(0x94);
    }
    const at = this.here;
    let memoized = false;
    const recorded = (): void => {
      if (memoized || copy || !useMemo) return;
      memoized = true;
      // A nested occurrence completed first: this one is a copy (found on the first pass).
      if (this.memo!.has(v)) (this.copies ??= new Set()).add(n);
      else this.memo!.set(v, at);
    };
    if (this.active !== null) this.active.add(v);
    write(recorded);
    if (this.active !== null) this.active.delete(v);
    recorded();
    if (copy) {
      this.depth--;
      const target = this.memo!.get(v);
      if (target === undefined) this.fail("internal error: a SUPERSEDE copy without its real value");
      this.writeRef(target);
    }
  }

  /** An OBJECT of any kind, created, made or built as its kind says. */
  private instance(v: object, useMemo: boolean, module: string, qualname: string, kind: ObjectKind, fields: readonly string[] | null, values: readonly unknown[]): void {
    const count = kind === "ATTRS" || kind === "TUPLE_FIELDS" ? fields?.length ?? 0 : valueCount(kind, null);
    if (values.length !== count) this.fail(`a ${kind} object of ${module}:${qualname} needs ${count} values, not ${values.length}`);
    switch (creationOf(kind)) {
      case "first":
        // As createdFirst does, without a closure per object.
        if (useMemo) this.memo!.set(v, this.here);
        if (this.active !== null) this.active.add(v);
        this.objectValue(module, qualname, kind, fields, values);
        if (this.active !== null) this.active.delete(v);
        return;
      case "after":
        return this.builtAfter(v, useMemo, () => this.objectValue(module, qualname, kind, fields, values));
      case "fromFirst":
        return this.builtAfter(v, useMemo, (recorded) => this.objectValue(module, qualname, kind, fields, values, recorded));
    }
  }

  private items(items: ArrayLike<unknown>, from = 0): void {
    const path = this.path;
    for (let i = from; i < items.length; i++) {
      path.push(i);
      this.value(items[i]);
      path.pop();
    }
  }

  private shared(v: unknown): boolean {
    if (!this.refs || this.canonical || typeof v !== "object" || v === null) return false;
    this.holders ??= countHolders(this.root, this);
    return this.holders.has(v);
  }

  private list(v: unknown[]): void {
    const n = v.length;
    if (n >= 2 && v.constructor === Array) {
      if (n >= 4 && (this.packedInts(v) || this.packedFloats(v) || this.tupleList(v))) return;
      const keys = this.recordsKeys(v);
      if (keys !== null) return this.records(v, keys);
      const rows = this.rowsPlan(v);
      if (rows !== null) return this.objectRows(rows);
    }
    this.enter();
    if (n <= 3) this.byte(0x58 + n);
    else {
      this.byte(0x71);
      this.varint(n);
    }
    this.items(v);
    this.depth--;
  }

  private packedInts(v: unknown[]): boolean {
    const n = v.length;
    for (let i = 0; i < n; i++) {
      const x = v[i];
      if (typeof x === "number") {
        if (!isIntNumber(x)) return false;
      } else if (typeof x !== "bigint" || x < I64_MIN || x > I64_MAX) return false;
    }
    this.enter();
    this.byte(0x78);
    this.varint(n);
    for (let i = 0; i < n; i++) {
      const x = v[i] as number | bigint;
      if (typeof x === "number") this.varint(zigzag(x));
      else this.varint(zigzagBig(x));
    }
    this.depth--;
    return true;
  }

  private packedFloats(v: unknown[]): boolean {
    const n = v.length;
    let narrow = 0;
    for (let i = 0; i < n; i++) {
      const x = v[i];
      if (!isFloatValue(x)) return false;
      if (fitsFloat32(floatOf(x as number | Float))) narrow++;
    }
    if (4 * narrow > n) return false;
    for (let i = 0; i < n; i++) if (v[i] instanceof Float && this.shared(v[i])) return false;
    this.enter();
    this.byte(0x79);
    this.varint(n);
    this.ensure(8 * n);
    for (let i = 0; i < n; i++) {
      const x = v[i];
      if (x instanceof Float && x.nanBits !== null) this.out.set(x.nanBits, this.pos);
      else {
        f64[0] = floatOf(x as number | Float);
        this.out.set(f64bytes, this.pos);
      }
      this.pos += 8;
    }
    this.depth--;
    return true;
  }

  private tupleList(v: unknown[]): boolean {
    if (!this.isTupleList(v)) return false;
    this.enter(2);
    this.byte(0x7c);
    this.varint(v.length);
    this.varint((v[0] as Tuple).length);
    const path = this.path;
    for (let i = 0; i < v.length; i++) {
      path.push(i);
      const row = v[i] as Tuple;
      if (this.active !== null) {
        if (this.active.has(row)) this.fail("cycle detected");
        this.active.add(row);
      }
      this.items(row);
      if (this.active !== null) this.active.delete(row);
      path.pop();
    }
    this.depth -= 2;
    return true;
  }

  /** Writes a list of dicts as records (spec 5.12.1), `keys` being their keys. */
  private records(v: unknown[], keys: string[]): void {
    this.recordsHeader(v.length, keys);
    const path = this.path;
    for (let i = 0; i < v.length; i++) {
      path.push(i);
      const row = v[i] as object;
      if (this.active !== null) {
        if (this.active.has(row)) this.fail("cycle detected");
        this.active.add(row);
      }
      for (const k of keys) {
        path.push(k);
        const x = recordValue(row, k);
        if (x === undefined) this.fail("cannot write undefined");
        this.value(x);
        path.pop();
      }
      if (this.active !== null) this.active.delete(row);
      path.pop();
    }
    this.depth -= 2;
  }

  /** The header and keys of a list of `n` dicts written as records; the rows' level is
   * entered. */
  private recordsHeader(n: number, keys: string[]): void {
    this.enter(2);
    this.byte(0x7b);
    this.varint(n);
    this.varint(keys.length);
    for (const k of keys) this.str(k);
  }

  /** The keys of a list written as records (spec 5.12.1), or null: not in canonical mode; at
   * least 2 dicts (exact Maps or plain objects), with the same str keys in one order, at least
   * 2, none shared. JS strings have no identity: equal keys are the same key. */
  private recordsKeys(v: unknown[]): string[] | null {
    if (this.canonical) return null;
    const keys = dictKeys(v[0]);
    if (keys === null || keys.length < 2) return null;
    for (let i = 1; i < v.length; i++) {
      const other = dictKeys(v[i]);
      if (other === null || other.length !== keys.length) return null;
      for (let j = 0; j < keys.length; j++) if (other[j] !== keys[j]) return null;
    }
    if (this.memo !== null) {
      for (let i = 0; i < v.length; i++) {
        if (this.memo.has(v[i] as object) || this.shared(v[i])) return null;
      }
    }
    return keys;
  }

  /** The names, fields and values of an instance that `common` writes as an ATTRS OBJECT (a
   * placeholder of ATTRS, a plain record with its CLASS, an instance of an ATTRS class of
   * types), or null. */
  private attrsOf(v: unknown): AttrsInstance | null {
    if (typeof v !== "object" || v === null) return null;
    const proto = Object.getPrototypeOf(v);
    if (proto === Object.prototype || proto === null) {
      const info = (v as Record<symbol, ClassInfo | undefined>)[CLASS];
      if (info === undefined) return null;
      const rec = v as Record<string, unknown>;
      const fields = info.fields ?? [];
      return { module: info.module, qualname: info.qualname, fields, values: fields.map((f) => rec[f]) };
    }
    if (v instanceof Placeholder) {
      if (v.kind !== "ATTRS" || v.fields === null || v.values.length !== v.fields.length) return null;
      return { module: v.module, qualname: v.qualname, fields: v.fields, values: v.values };
    }
    const allowed = this.typesByProto?.get(proto);
    if (allowed === undefined || allowed.kind !== "ATTRS" || writtenAsBuiltin(v)) return null;
    const [module, qualname] = splitName(allowed.name);
    const rec = v as Record<string, unknown>;
    const fields = Object.keys(rec);
    return { module, qualname, fields, values: fields.map((f) => rec[f]) };
  }

  /** How a list is written as object rows (spec 5.17.9), or null: not in canonical mode; at
   * least 2 items (the caller checked), each an instance written as an ATTRS OBJECT of one
   * shape (the same names and fields, at least one), none shared. Field j is a float column
   * when the first row's value is a float written as FLOAT64 and every row's is a float, none
   * shared (a JS number has no identity; a Float may be held elsewhere too). */
  private rowsPlan(v: unknown[]): RowsPlan | null {
    if (this.canonical) return null;
    const first = this.attrsOf(v[0]);
    if (first === null || first.fields.length === 0) return null;
    const { module, qualname, fields } = first;
    const rows: (readonly unknown[])[] = [first.values];
    for (let i = 1; i < v.length; i++) {
      const other = this.attrsOf(v[i]);
      if (other === null || other.module !== module || other.qualname !== qualname || !sameFields(other.fields, fields)) return null;
      rows.push(other.values);
    }
    const memo = this.memo;
    if (memo !== null) {
      for (let i = 0; i < v.length; i++) {
        if (memo.has(v[i] as object) || this.shared(v[i])) return null;
      }
    }
    const columns: number[] = [];
    for (let j = 0; j < fields.length; j++) {
      const x = rows[0][j];
      if (!isFloatValue(x) || fitsFloat32(floatOf(x as number | Float))) continue;
      let column = true;
      for (let i = 0; column && i < rows.length; i++) {
        const y = rows[i][j];
        column = isFloatValue(y) && !(y instanceof Float && memo !== null && (memo.has(y) || this.shared(y)));
      }
      if (column) columns.push(j);
    }
    return { instances: v, module, qualname, fields, rows, columns };
  }

  /** The head of a list written as object rows: the tag, the count, the shape (defined at its
   * first use, as for an OBJECT) and the float columns; the rows' level is entered. */
  private rowsHead(plan: RowsPlan): void {
    this.enter(2);
    this.byte(0x7d);
    this.varint(plan.rows.length);
    this.shapeRef(plan.module, plan.qualname, "ATTRS", plan.fields);
    this.varint(plan.columns.length);
    for (const j of plan.columns) this.varint(j);
  }

  /** Row i's values, checked as they are written (a placeholder's values array may have been
   * changed by code the encoder ran since the list was found to fit); without refs, its
   * instance is being written, for the cycle check. */
  private rowBegin(plan: RowsPlan, i: number): readonly unknown[] {
    const values = plan.rows[i];
    if (values.length !== plan.fields.length) this.fail("an instance's values changed while its list was written as object rows");
    if (this.active !== null) {
      const row = plan.instances[i] as object;
      if (this.active.has(row)) this.fail("cycle detected");
      this.active.add(row);
    }
    return values;
  }

  private rowEnd(plan: RowsPlan, i: number): void {
    if (this.active !== null) this.active.delete(plan.instances[i] as object);
  }

  /** A float column's value, as its 8 bytes. */
  private columnFloat(x: unknown): void {
    if (!isFloatValue(x)) this.fail("a float column's value changed while its list was written as object rows");
    this.ensure(8);
    if (x instanceof Float && x.nanBits !== null) this.out.set(x.nanBits, this.pos);
    else {
      f64[0] = floatOf(x as number | Float);
      this.out.set(f64bytes, this.pos);
    }
    this.pos += 8;
  }

  /** Writes a list as object rows (spec 5.17.9): the instances are never memoized (none is
   * shared), their values are met in order, row after row. */
  private objectRows(plan: RowsPlan): void {
    this.rowsHead(plan);
    const path = this.path, k = plan.fields.length, columns = plan.columns;
    const isColumn = new Uint8Array(k);
    for (const j of columns) isColumn[j] = 1;
    for (let i = 0; i < plan.rows.length; i++) {
      path.push(i);
      const values = this.rowBegin(plan, i);
      for (let j = 0; j < k; j++) {
        path.push(j);
        if (isColumn[j] !== 0) this.columnFloat(values[j]);
        else this.value(values[j]);
        path.pop();
      }
      this.rowEnd(plan, i);
      path.pop();
    }
    this.depth -= 2;
  }

  /** Whether a list is written as rows (spec 5.10.1): tuples of one length, none shared. */
  private isTupleList(v: unknown[]): boolean {
    const first = v[0];
    if (!(first instanceof Tuple) || first.constructor !== Tuple || first.length === 0) return false;
    const k = first.length;
    for (let i = 1; i < v.length; i++) {
      const t = v[i];
      if (!(t instanceof Tuple) || t.constructor !== Tuple || t.length !== k) return false;
    }
    if (this.memo !== null && !this.canonical) {
      for (let i = 0; i < v.length; i++) {
        if (this.memo.has(v[i] as object) || this.shared(v[i])) return false;
      }
    }
    return true;
  }

  private tuple(v: Tuple): void {
    this.enter();
    const n = v.length;
    if (n <= 3) this.byte(0x5c + n);
    else {
      this.byte(0x72);
      this.varint(n);
    }
    this.items(v);
    this.depth--;
  }

  private bytes(v: Uint8Array, tag: number, oobKind: 0 | 1): void {
    if (this.options.bufferCallback && v.length >= OOB_THRESHOLD) {
      this.outOfBand(outOfBandBlob({ kind: oobKind, index: this.buffers.length, length: v.length }), v);
      return;
    }
    this.byte(tag);
    this.varint(v.length);
    this.raw(v);
  }

  private outOfBand(blob: Uint8Array, buffer: Uint8Array): void {
    this.buffers.push(buffer);
    this.byte(0x76);
    this.varint(ExtCode.OUT_OF_BAND);
    this.varint(blob.length);
    this.raw(blob);
  }

  private extBlob(v: ExtBlobValue): void {
    if (this.options.bufferCallback) {
      if (v instanceof PyArray && v.data.length >= OOB_THRESHOLD) {
        return this.outOfBand(outOfBandBlob({ kind: 2, index: this.buffers.length, length: v.data.length, typecode: v.typecode }), v.data);
      }
      if (v instanceof NDArray && v.data.length >= OOB_THRESHOLD) {
        return this.outOfBand(outOfBandBlob({ kind: 3, index: this.buffers.length, length: v.data.length, shape: [...v.shape], dtype: v.dtype }), v.data);
      }
    }
    this.byte(0x76);
    this.varint(v.code);
    this.varint(v.blob.length);
    this.raw(v.blob);
  }

  private sortKey(v: unknown): Uint8Array {
    const sub = new Encoder({ ...this.options, bufferCallback: undefined }, v, NO_COPIES);
    sub.value(v);
    return sub.out.slice(3, sub.pos);
  }

  private ordered<T>(items: T[], key: (x: T) => unknown): T[] {
    const keyed = items.map((x) => ({ x, k: this.sortKey(key(x)) }));
    keyed.sort((a, b) => compareBytes(a.k, b.k));
    return keyed.map((e) => e.x);
  }

  private dict(v: Map<unknown, unknown>, sort: boolean): void {
    this.enter();
    const n = v.size;
    if (n <= 7) this.byte(0x60 + n);
    else {
      this.byte(0x73);
      this.varint(n);
    }
    const entries = sort && this.canonical ? this.ordered([...v], (e) => e[0]) : v;
    const path = this.path;
    for (const [k, x] of entries) {
      this.value(k);
      path.push(typeof k === "string" || typeof k === "number" ? k : String(k));
      this.value(x);
      path.pop();
    }
    this.depth--;
  }

  private plainObject(v: Record<string, unknown>): void {
    const keys = Object.keys(v);
    if (this.canonical && this.sortKeys) {
      const m = new Map<unknown, unknown>();
      for (const k of keys) m.set(k, v[k]);
      return this.dict(m, true);
    }
    this.enter();
    const n = keys.length;
    if (n <= 7) this.byte(0x60 + n);
    else {
      this.byte(0x73);
      this.varint(n);
    }
    const path = this.path;
    for (let i = 0; i < n; i++) {
      const k = keys[i];
      this.str(k);
      path.push(k);
      const x = v[k];
      if (x === undefined) this.fail("cannot write undefined");
      this.value(x);
      path.pop();
    }
    this.depth--;
  }

  private set(v: Set<unknown>, tag: number): void {
    this.enter();
    this.byte(tag);
    this.varint(v.size);
    const elements = this.canonical ? this.ordered([...v], (x) => x) : [...v];
    this.items(elements);
    this.depth--;
  }

  private composite(code: number, values: unknown[]): void {
    this.enter();
    this.byte(0x76);
    this.varint(code);
    this.items(values);
    this.depth--;
  }

  private mapComposite(v: OrderedDict | Counter | DefaultDict | Namespace): void {
    const fresh = new FreshDict(v);
    if (v instanceof DefaultDict) return this.composite(ExtCode.DEFAULTDICT, [v.factory, fresh]);
    if (v instanceof Namespace) return this.composite(ExtCode.NAMESPACE, [fresh]);
    this.composite(v instanceof Counter ? ExtCode.COUNTER : ExtCode.ORDERED_DICT, [fresh]);
  }

  /** An OBJECT and its values; `firstDone`, for a kind made from its first value, is called
   * once that value is written. */
  private objectValue(module: string, qualname: string, kind: ObjectKind, fields: readonly string[] | null, values: readonly unknown[], firstDone?: () => void): void {
    this.objectHead(module, qualname, kind, fields);
    this.enter();
    if (firstDone === undefined) this.items(values);
    else {
      this.items(values.slice(0, 1));
      firstDone();
      this.items(values, 1);
    }
    this.depth--;
  }

  /** The OBJECT tag and its shape. */
  private objectHead(module: string, qualname: string, kind: ObjectKind, fields: readonly string[] | null): void {
    this.byte(0x77);
    this.shapeRef(module, qualname, kind, fields);
  }

  /** The shape reference of an OBJECT or OBJECT_ROWS: a definition at the shape's first use,
   * then its number. */
  private shapeRef(module: string, qualname: string, kind: ObjectKind, fields: readonly string[] | null): void {
    const recent = this.recentShapes;
    for (let i = 0; i < recent.length; i++) {
      const r = recent[i];
      if (r.fields === fields && r.module === module && r.qualname === qualname && r.kind === kind) {
        this.varint(r.n + 1);
        return;
      }
    }
    // JSON, not a join: a field name may hold any character, NUL included.
    const key = JSON.stringify([module, qualname, kind, fields]);
    const shapes = (this.shapes ??= new Map());
    const shape = shapes.get(key);
    if (recent.length === 8) recent.pop();
    recent.unshift({ module, qualname, kind, fields, n: shape ?? shapes.size });
    if (shape !== undefined) this.varint(shape + 1);
    else {
      shapes.set(key, shapes.size);
      this.varint(0);
      for (const name of [module, qualname]) {
        const b = new TextEncoder().encode(name);
        this.varint(b.length);
        this.raw(b);
      }
      this.byte(OBJECT_KINDS.indexOf(kind));
      if (kind === "ATTRS" || kind === "TUPLE_FIELDS") {
        this.varint(fields!.length);
        for (const f of fields!) {
          const b = new TextEncoder().encode(f);
          this.varint(b.length);
          this.raw(b);
        }
      }
    }
  }

  private classInstance(v: object, allowed: AllowedClass, useMemo: boolean): void {
    const [module, qualname] = splitName(allowed.name);
    const rec = v as Record<string, unknown>;
    switch (allowed.kind) {
      case "ATTRS": {
        const fields = Object.keys(rec);
        return this.createdFirst(v, useMemo, () => this.objectValue(module, qualname, "ATTRS", fields, fields.map((f) => rec[f])));
      }
      case "STATE": {
        const state = allowed.encode ? allowed.encode(v) : new Map(Object.entries(rec));
        return this.createdFirst(v, useMemo, () => this.objectValue(module, qualname, "STATE", null, [state]));
      }
      case "TUPLE_FIELDS": {
        const fields = allowed.fields ?? Object.keys(rec);
        return this.builtAfter(v, useMemo, () => this.objectValue(module, qualname, "TUPLE_FIELDS", fields, fields.map((f) => rec[f])));
      }
      case "ENUM":
      case "CUSTOM": {
        if (!allowed.encode) this.fail(`${allowed.name} needs an encode function`);
        const state = allowed.encode(v);
        return this.builtAfter(v, useMemo, () => this.objectValue(module, qualname, allowed.kind, null, [state]));
      }
      case "GLOBAL":
        return this.fail(`${allowed.name} is a GLOBAL: the allowed object itself is written, not its instances`);
      default: {
        // The kinds of several values: encode gives them all, in the kind's order.
        if (!allowed.encode) this.fail(`${allowed.name} needs an encode function`);
        const values = allowed.encode(v);
        if (!Array.isArray(values)) this.fail(`the encode function of ${allowed.name} must return the array of its values`);
        return this.instance(v, useMemo, module, qualname, allowed.kind, null, values);
      }
    }
  }

  // ---- the deep walk ----
  //
  // The walk above recurses, a few JS frames per level, and the call stack ends at about two
  // thousand levels. Past DEEP_FROM levels the walk goes on with the generator twins below:
  // each writes what its namesake writes, in the same order, but yields each child instead
  // of writing it, and one loop (deep) runs them from an explicit stack, so any depth up to
  // max_depth fits. Generators cost a few times a call per container, so the walk above stays
  // the usual one; a test runs the whole fuzz corpus through both and compares the bytes.

  private deep(root: object): void {
    const stack: Walk[] = [this.objectG(root)];
    while (stack.length > 0) {
      const step = stack[stack.length - 1].next();
      if (step.done) stack.pop();
      else if (typeof step.value === "object" && step.value !== null) stack.push(this.objectG(step.value));
      else this.value(step.value);
    }
  }

  private *objectG(v: object): Walk {
    const proto = Object.getPrototypeOf(v);
    if (proto !== Map.prototype && proto !== Array.prototype && proto !== Object.prototype) {
      if (v instanceof PySingleton) return this.singleton(v);
      if (v instanceof Placeholder && v.kind === "GLOBAL") v = this.globalPlaceholder(v);
    }
    const memo = this.memo;
    if (memo !== null) {
      const target = memo.get(v);
      if (target !== undefined) return this.writeRef(target);
    }
    const useMemo = memo !== null && this.memoizable(v);
    if (this.active !== null && this.active.has(v)) this.fail("cycle detected");
    // The containers, tested in common's order; anything else holds no value to walk, and
    // common writes it.
    if (Array.isArray(v)) {
      if (v instanceof Tuple) return yield* this.builtAfterG(v, useMemo && v.length > 0, () => this.tupleG(v));
      this.begin(v, useMemo);
      yield* this.listG(v);
      if (this.active !== null) this.active.delete(v);
      return;
    }
    if (proto === Map.prototype) {
      this.begin(v, useMemo);
      yield* this.dictG(v as Map<unknown, unknown>, this.sortKeys);
      if (this.active !== null) this.active.delete(v);
      return;
    }
    if ((proto === Object.prototype || proto === null) && (v as Record<symbol, unknown>)[CLASS] !== undefined) {
      const info = (v as Record<symbol, ClassInfo>)[CLASS];
      const rec = v as Record<string, unknown>;
      const fields = info.fields ?? [];
      this.begin(v, useMemo);
      yield* this.objectValueG(info.module, info.qualname, "ATTRS", fields, fields.map((f) => rec[f]));
      if (this.active !== null) this.active.delete(v);
      return;
    }
    if (proto === Object.prototype || proto === null) {
      this.begin(v, useMemo);
      yield* this.plainObjectG(v as Record<string, unknown>);
      if (this.active !== null) this.active.delete(v);
      return;
    }
    if (v instanceof Uint8Array || v instanceof Float) return this.common(v, proto);
    if (v instanceof Map) {
      if (v instanceof OrderedDict || v instanceof Counter || v instanceof DefaultDict || v instanceof Namespace) {
        return yield* this.createdFirstG(v, useMemo, () => this.mapCompositeG(v));
      }
      this.begin(v, useMemo);
      yield* this.dictG(v, this.sortKeys && !(v instanceof FreshDict));
      if (this.active !== null) this.active.delete(v);
      return;
    }
    if (v instanceof Set) {
      if (v instanceof FrozenSet) return yield* this.builtAfterG(v, useMemo, () => this.setG(v, 0x75));
      return yield* this.createdFirstG(v, useMemo, () => this.setG(v, 0x74));
    }
    if (v instanceof Complex || v instanceof ExtBlobValue) return this.common(v, proto);
    if (v instanceof Placeholder) return yield* this.instanceG(v, useMemo, v.module, v.qualname, v.kind, v.fields, v.values);
    if (v instanceof Deque) return yield* this.createdFirstG(v, useMemo, () => this.compositeG(ExtCode.DEQUE, [v.maxlen, new FreshList(v.items)]));
    if (v instanceof Fraction) return yield* this.builtAfterG(v, useMemo, () => this.compositeG(ExtCode.FRACTION, [v.numerator, v.denominator]));
    if (v instanceof Range) return yield* this.builtAfterG(v, useMemo, () => this.compositeG(ExtCode.RANGE, [v.start, v.stop, v.step]));
    if (v instanceof Slice) return yield* this.builtAfterG(v, useMemo, () => this.compositeG(ExtCode.SLICE, [v.start, v.stop, v.step]));
    if (v instanceof Date || ArrayBuffer.isView(v)) return this.common(v, proto);
    if (v instanceof FreshList) return yield* this.listG(v.items);
    const allowed = this.typesByProto?.get(proto!);
    if (allowed) return yield* this.classInstanceG(v, allowed, useMemo);
    return this.common(v, proto);
  }

  private *createdFirstG(v: object, useMemo: boolean, write: () => Walk): Walk {
    if (useMemo) this.memo!.set(v, this.here);
    if (this.active !== null) this.active.add(v);
    yield* write();
    if (this.active !== null) this.active.delete(v);
  }

  private *builtAfterG(v: object, useMemo: boolean, write: (recorded: () => void) => Walk): Walk {
    const n = this.occurrence++;
    const copy = this.supersede.has(n);
    if (copy) {
      this.enter();
      this.byte(0x94);
    }
    const at = this.here;
    let memoized = false;
    const recorded = (): void => {
      if (memoized || copy || !useMemo) return;
      memoized = true;
      if (this.memo!.has(v)) (this.copies ??= new Set()).add(n);
      else this.memo!.set(v, at);
    };
    if (this.active !== null) this.active.add(v);
    yield* write(recorded);
    if (this.active !== null) this.active.delete(v);
    recorded();
    if (copy) {
      this.depth--;
      const target = this.memo!.get(v);
      if (target === undefined) this.fail("internal error: a SUPERSEDE copy without its real value");
      this.writeRef(target);
    }
  }

  private *instanceG(v: object, useMemo: boolean, module: string, qualname: string, kind: ObjectKind, fields: readonly string[] | null, values: readonly unknown[]): Walk {
    const count = kind === "ATTRS" || kind === "TUPLE_FIELDS" ? fields?.length ?? 0 : valueCount(kind, null);
    if (values.length !== count) this.fail(`a ${kind} object of ${module}:${qualname} needs ${count} values, not ${values.length}`);
    switch (creationOf(kind)) {
      case "first":
        return yield* this.createdFirstG(v, useMemo, () => this.objectValueG(module, qualname, kind, fields, values));
      case "after":
        return yield* this.builtAfterG(v, useMemo, () => this.objectValueG(module, qualname, kind, fields, values));
      case "fromFirst":
        return yield* this.builtAfterG(v, useMemo, (recorded) => this.objectValueG(module, qualname, kind, fields, values, recorded));
    }
  }

  private *itemsG(items: ArrayLike<unknown>, from = 0): Walk {
    const path = this.path;
    for (let i = from; i < items.length; i++) {
      path.push(i);
      yield items[i];
      path.pop();
    }
  }

  private *listG(v: unknown[]): Walk {
    const n = v.length;
    const keys = n >= 2 && v.constructor === Array ? this.recordsKeys(v) : null;
    if (keys !== null) {
      this.recordsHeader(n, keys);
      const path = this.path;
      for (let i = 0; i < n; i++) {
        path.push(i);
        const row = v[i] as object;
        if (this.active !== null) {
          if (this.active.has(row)) this.fail("cycle detected");
          this.active.add(row);
        }
        for (const k of keys) {
          path.push(k);
          const x = recordValue(row, k);
          if (x === undefined) this.fail("cannot write undefined");
          yield x;
          path.pop();
        }
        if (this.active !== null) this.active.delete(row);
        path.pop();
      }
      this.depth -= 2;
      return;
    }
    const plan = n >= 2 && v.constructor === Array ? this.rowsPlan(v) : null;
    if (plan !== null) {
      this.rowsHead(plan);
      const path = this.path, k = plan.fields.length;
      const isColumn = new Uint8Array(k);
      for (const j of plan.columns) isColumn[j] = 1;
      for (let i = 0; i < n; i++) {
        path.push(i);
        const values = this.rowBegin(plan, i);
        for (let j = 0; j < k; j++) {
          path.push(j);
          if (isColumn[j] !== 0) this.columnFloat(values[j]);
          else yield values[j];
          path.pop();
        }
        this.rowEnd(plan, i);
        path.pop();
      }
      this.depth -= 2;
      return;
    }
    if (n >= 4 && v.constructor === Array) {
      if (this.packedInts(v) || this.packedFloats(v)) return;
      if (this.isTupleList(v)) {
        this.enter(2);
        this.byte(0x7c);
        this.varint(n);
        this.varint((v[0] as Tuple).length);
        const path = this.path;
        for (let i = 0; i < n; i++) {
          path.push(i);
          const row = v[i] as Tuple;
          if (this.active !== null) {
            if (this.active.has(row)) this.fail("cycle detected");
            this.active.add(row);
          }
          yield* this.itemsG(row);
          if (this.active !== null) this.active.delete(row);
          path.pop();
        }
        this.depth -= 2;
        return;
      }
    }
    this.enter();
    if (n <= 3) this.byte(0x58 + n);
    else {
      this.byte(0x71);
      this.varint(n);
    }
    yield* this.itemsG(v);
    this.depth--;
  }

  private *tupleG(v: Tuple): Walk {
    this.enter();
    const n = v.length;
    if (n <= 3) this.byte(0x5c + n);
    else {
      this.byte(0x72);
      this.varint(n);
    }
    yield* this.itemsG(v);
    this.depth--;
  }

  private *dictG(v: Map<unknown, unknown>, sort: boolean): Walk {
    this.enter();
    const n = v.size;
    if (n <= 7) this.byte(0x60 + n);
    else {
      this.byte(0x73);
      this.varint(n);
    }
    const entries = sort && this.canonical ? this.ordered([...v], (e) => e[0]) : v;
    const path = this.path;
    for (const [k, x] of entries) {
      yield k;
      path.push(typeof k === "string" || typeof k === "number" ? k : String(k));
      yield x;
      path.pop();
    }
    this.depth--;
  }

  private *plainObjectG(v: Record<string, unknown>): Walk {
    const keys = Object.keys(v);
    if (this.canonical && this.sortKeys) {
      const m = new Map<unknown, unknown>();
      for (const k of keys) m.set(k, v[k]);
      return yield* this.dictG(m, true);
    }
    this.enter();
    const n = keys.length;
    if (n <= 7) this.byte(0x60 + n);
    else {
      this.byte(0x73);
      this.varint(n);
    }
    const path = this.path;
    for (let i = 0; i < n; i++) {
      const k = keys[i];
      this.str(k);
      path.push(k);
      const x = v[k];
      if (x === undefined) this.fail("cannot write undefined");
      yield x;
      path.pop();
    }
    this.depth--;
  }

  private *setG(v: Set<unknown>, tag: number): Walk {
    this.enter();
    this.byte(tag);
    this.varint(v.size);
    const elements = this.canonical ? this.ordered([...v], (x) => x) : [...v];
    yield* this.itemsG(elements);
    this.depth--;
  }

  private *compositeG(code: number, values: unknown[]): Walk {
    this.enter();
    this.byte(0x76);
    this.varint(code);
    yield* this.itemsG(values);
    this.depth--;
  }

  private *mapCompositeG(v: OrderedDict | Counter | DefaultDict | Namespace): Walk {
    const fresh = new FreshDict(v);
    if (v instanceof DefaultDict) return yield* this.compositeG(ExtCode.DEFAULTDICT, [v.factory, fresh]);
    if (v instanceof Namespace) return yield* this.compositeG(ExtCode.NAMESPACE, [fresh]);
    yield* this.compositeG(v instanceof Counter ? ExtCode.COUNTER : ExtCode.ORDERED_DICT, [fresh]);
  }

  private *objectValueG(module: string, qualname: string, kind: ObjectKind, fields: readonly string[] | null, values: readonly unknown[], firstDone?: () => void): Walk {
    this.objectHead(module, qualname, kind, fields);
    this.enter();
    if (firstDone === undefined) yield* this.itemsG(values);
    else {
      yield* this.itemsG(values.slice(0, 1));
      firstDone();
      yield* this.itemsG(values, 1);
    }
    this.depth--;
  }

  private *classInstanceG(v: object, allowed: AllowedClass, useMemo: boolean): Walk {
    const [module, qualname] = splitName(allowed.name);
    const rec = v as Record<string, unknown>;
    switch (allowed.kind) {
      case "ATTRS": {
        const fields = Object.keys(rec);
        return yield* this.createdFirstG(v, useMemo, () => this.objectValueG(module, qualname, "ATTRS", fields, fields.map((f) => rec[f])));
      }
      case "STATE": {
        const state = allowed.encode ? allowed.encode(v) : new Map(Object.entries(rec));
        return yield* this.createdFirstG(v, useMemo, () => this.objectValueG(module, qualname, "STATE", null, [state]));
      }
      case "TUPLE_FIELDS": {
        const fields = allowed.fields ?? Object.keys(rec);
        return yield* this.builtAfterG(v, useMemo, () => this.objectValueG(module, qualname, "TUPLE_FIELDS", fields, fields.map((f) => rec[f])));
      }
      case "ENUM":
      case "CUSTOM": {
        if (!allowed.encode) this.fail(`${allowed.name} needs an encode function`);
        const state = allowed.encode(v);
        return yield* this.builtAfterG(v, useMemo, () => this.objectValueG(module, qualname, allowed.kind, null, [state]));
      }
      case "GLOBAL":
        return this.fail(`${allowed.name} is a GLOBAL: the allowed object itself is written, not its instances`);
      default: {
        if (!allowed.encode) this.fail(`${allowed.name} needs an encode function`);
        const values = allowed.encode(v);
        if (!Array.isArray(values)) this.fail(`the encode function of ${allowed.name} must return the array of its values`);
        return yield* this.instanceG(v, useMemo, module, qualname, allowed.kind, null, values);
      }
    }
  }

  isRegistered(proto: object): boolean {
    return this.typesByProto?.has(proto) ?? false;
  }
}

const NO_OUTPUT = new Uint8Array(0);
const NO_OPTIONS: EncodeOptions = {};

/** A writer of the deep walk: it yields each child value for the walk's loop to write. */
type Walk = Generator<unknown, void, undefined>;

/** How deep the recursive walk goes before the deep walk takes over: a few hundred KB of
 * call stack at most. */
const DEEP_FROM = 256;
let deepFrom = DEEP_FROM;
/** For tests: the depth from which the deep walk writes (0: all of it; no argument: back to
 * the default). */
export function setDeepWalkFrom(levels = DEEP_FROM): void {
  deepFrom = levels;
}

/** A list the encoder makes while writing (a deque's items): never memoized itself. */
class FreshList {
  constructor(readonly items: unknown[]) {}
}
/** The dict of an OrderedDict, Counter or defaultdict, made while writing. */
class FreshDict extends Map<unknown, unknown> {
  constructor(source: Map<unknown, unknown>) {
    super(source);
  }
}

function splitName(name: string): [string, string] {
  const i = name.indexOf(":");
  if (i < 0) throw new RangeError(`class name ${name} is not "module:qualname"`);
  return [name.slice(0, i), name.slice(i + 1)];
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
}

function jsDate(d: Date, enc: Encoder): AmberDateTime {
  const t = d.getTime();
  if (Number.isNaN(t)) enc.fail("cannot write an invalid Date");
  return new AmberDateTime(d.getUTCFullYear(), d.getUTCMonth() + 1, d.getUTCDate(), d.getUTCHours(), d.getUTCMinutes(),
    d.getUTCSeconds(), d.getUTCMilliseconds() * 1000, { kind: "utc" });
}

function checkOptions(options: EncodeOptions): void {
  const d = options.maxDepth;
  if (d !== undefined && (!Number.isInteger(d) || d < 0 || d > HARD_MAX_DEPTH)) {
    throw new RangeError(`maxDepth must be an integer from 0 to ${HARD_MAX_DEPTH}`);
  }
}

function walk(enc: Encoder, value: unknown): void {
  try {
    enc.value(value);
  } catch (e) {
    // The encoder recurses once per level; a graph deeper than the JS stack allows fails
    // cleanly instead of with a bare RangeError.
    if (e instanceof RangeError && /call stack/.test(e.message)) {
      throw new EncodeError("nesting deeper than the JS call stack allows (lower maxDepth)", "root");
    }
    throw e;
  }
}

const NO_COPIES: ReadonlySet<number> = new Set();
const MAX_KEPT_OUT = 1 << 20;

/**
 * One encoder for every encode, reset for each (as the decoder is, see decodeBody): V8's
 * optimized encoder code holds the encoder it was made with weakly, and when a full GC found
 * that one gone, all of that code was thrown away. An encode started inside another (by a
 * class's encode function) makes an encoder of its own.
 */
let spareEncoder: Encoder | null = new Encoder({}, null, NO_COPIES);

function encodePlain(value: unknown, options: EncodeOptions): { payload: Uint8Array; buffers: Uint8Array[] } {
  checkOptions(options);
  const enc = spareEncoder ?? new Encoder(options, value, NO_COPIES);
  const shared = enc === spareEncoder;
  spareEncoder = null;
  try {
    enc.init(options, value, NO_COPIES);
    walk(enc, value);
    if (enc.copies !== null) {
      // Second pass (spec 6.5): the same walk, with SUPERSEDE before the copies.
      enc.init(options, value, enc.copies);
      walk(enc, value);
    }
    return { payload: enc.out.slice(0, enc.pos), buffers: enc.buffers };
  } finally {
    if (shared) {
      enc.init(NO_OPTIONS, null, NO_COPIES);
      spareEncoder = enc;
    }
  }
}

/** Encodes one value into a payload (signed and compressed if asked). */
export function encode(value: unknown, options: EncodeOptions = {}): Uint8Array {
  const { payload, buffers } = encodePlain(value, options);
  const sealed = seal(payload, options);
  for (const b of buffers) options.bufferCallback!(b);
  return sealed;
}

/** encode, signing with WebCrypto (for browsers). */
export async function encodeAsync(value: unknown, options: EncodeOptions = {}): Promise<Uint8Array> {
  const { payload, buffers } = encodePlain(value, options);
  const sealed = await sealAsync(payload, options);
  for (const b of buffers) options.bufferCallback!(b);
  return sealed;
}
