// The value notation of spec section 10.3: building JS values from it (for the encoder) and
// comparing decoded values with it (types exact, floats by bits, identity by anchors).

import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { dirname, join } from "node:path";
import {
  Tuple, FrozenSet, ByteArray, Complex, Float, Placeholder, ExtBlobValue, EXT_NAMES, parseExtBlob,
  Deque, OrderedDict, Counter, DefaultDict, Fraction, Range, Slice, PyArray, NDArray, OBJECT_KINDS,
  Namespace, PySingleton, type ObjectKind, decode, trace, DecodeError,
} from "../src/index.js";
import assert from "node:assert/strict";

const here = dirname(fileURLToPath(import.meta.url));
/** The repository's spec/vectors directory (tests run from js/dist/test). */
export const VECTORS = join(here, "..", "..", "..", "spec", "vectors");

export function loadVectors(file: string): any {
  return JSON.parse(readFileSync(join(VECTORS, file), "utf8"));
}

export function hexBytes(hex: string): Uint8Array {
  const h = hex.replace(/\s+/g, "");
  const out = new Uint8Array(h.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(h.slice(2 * i, 2 * i + 2), 16);
  return out;
}

export function toHex(b: Uint8Array): string {
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

function floatFromBits(hex: string): number | Float {
  const b = hexBytes(hex).reverse();
  const x = new DataView(b.buffer).getFloat64(0, true);
  if (Number.isInteger(x)) return new Float(x);
  if (x !== x) return new Float(x, b);
  return x;
}

function floatBits(x: number): string {
  const dv = new DataView(new ArrayBuffer(8));
  dv.setFloat64(0, x);
  return toHex(new Uint8Array(dv.buffer));
}

const intOf = (s: string): number | bigint => {
  const b = BigInt(s);
  return b >= -9007199254740991n && b <= 9007199254740991n ? Number(b) : b;
};

const extCode = (name: string) => EXT_NAMES.indexOf(name);

/** Builds the JS value a notation node stands for; anchors become shared objects. */
export function build(node: any, anchors = new Map<string, unknown>()): unknown {
  if (node === null || typeof node === "boolean") return node;
  if ("anchor" in node) return buildAnchored(node.value, node.anchor, anchors);
  if ("ref" in node) {
    if (!anchors.has(node.ref)) throw new Error(`ref ${node.ref} before its anchor`);
    return anchors.get(node.ref);
  }
  return buildAnchored(node, null, anchors);
}

function buildAnchored(node: any, anchor: string | null, anchors: Map<string, unknown>): unknown {
  const reg = <T>(v: T): T => { if (anchor !== null) anchors.set(anchor, v); return v; };
  if (node === null || typeof node === "boolean") return reg(node);
  if ("int" in node) return reg(intOf(node.int));
  if ("float" in node) return reg(floatFromBits(node.float));
  if ("complex" in node) {
    const [re, im] = node.complex.map((h: string) => Number(floatFromBits(h)));
    return reg(new Complex(re, im));
  }
  if ("str" in node) return reg(node.str);
  if ("str_cp" in node) return reg(node.str_cp.map((c: number) => String.fromCodePoint(c)).join(""));
  if ("bytes" in node) return reg(hexBytes(node.bytes));
  if ("bytearray" in node) return reg(new ByteArray(hexBytes(node.bytearray)));
  if ("list" in node) {
    const out = reg([] as unknown[]);
    for (const x of node.list) out.push(build(x, anchors));
    return out;
  }
  if ("tuple" in node) {
    const out = reg(new Tuple());
    for (const x of node.tuple) out.push(build(x, anchors));
    return out;
  }
  if ("set" in node || "frozenset" in node) {
    const out = reg("set" in node ? new Set() : new FrozenSet());
    for (const x of node.set ?? node.frozenset) out.add(build(x, anchors));
    return out;
  }
  if ("dict" in node) {
    const out = reg(new Map());
    for (const [k, v] of node.dict) {
      const key = build(k, anchors);
      out.set(key, build(v, anchors));
    }
    return out;
  }
  if ("ext" in node) {
    if ("blob" in node) {
      if (node.ext === "OUT_OF_BAND") throw new Error("OUT_OF_BAND values are built from buffers");
      return reg(parseExtBlob(extCode(node.ext), hexBytes(node.blob)));
    }
    const values = node.values as any[];
    switch (node.ext) {
      case "NAMESPACE": {
        const ns = reg(new Namespace());
        for (const [k, v] of values[0].dict) ns.set(build(k, anchors) as string, build(v, anchors));
        return ns;
      }
      case "DEQUE": {
        const d = reg(new Deque());
        d.maxlen = build(values[0], anchors) as number | null;
        d.items = build(values[1], anchors) as unknown[];
        return d;
      }
      case "ORDERED_DICT":
      case "COUNTER":
      case "DEFAULTDICT": {
        const m = reg(node.ext === "ORDERED_DICT" ? new OrderedDict() : node.ext === "COUNTER" ? new Counter() : new DefaultDict());
        const items = values[values.length - 1];
        if (node.ext === "DEFAULTDICT") (m as DefaultDict).factory = values[0] === null ? null : values[0].str;
        for (const [k, v] of items.dict) m.set(build(k, anchors), build(v, anchors));
        return m;
      }
      case "FRACTION": {
        const [n, d] = values.map((v) => build(v, anchors));
        return reg(new Fraction(n as number, d as number));
      }
      case "RANGE": {
        const [a, b, c] = values.map((v) => build(v, anchors));
        return reg(new Range(a as number, b as number, c as number));
      }
      case "SLICE": {
        const [a, b, c] = values.map((v) => build(v, anchors));
        return reg(new Slice(a, b, c));
      }
    }
    throw new Error(`unknown EXT ${node.ext}`);
  }
  if ("object" in node) {
    const o = node.object;
    const kind = o.kind as ObjectKind;
    // A JS placeholder is mutable, so even a built-after one can be on a cycle (the encoder
    // writes SUPERSEDE for it, as for a Python named tuple rebuilt at the ref).
    const p = reg(new Placeholder(o.module, o.qualname, kind, o.fields ?? null, []));
    for (const v of node.values) p.values.push(build(v, anchors));
    return p;
  }
  throw new Error(`unknown notation ${JSON.stringify(node).slice(0, 80)}`);
}

/** Compares a decoded value with a notation node; returns null or what differs. */
export class Comparer {
  private anchors = new Map<string, unknown>();
  private anchorNodes = new Map<string, unknown>();
  private seen = new Set<object>();
  constructor(private readonly ignoreIdentity: boolean, private readonly buffers: Uint8Array[] = []) {}

  compare(v: unknown, node: any, path = "root"): string | null {
    if (node !== null && typeof node === "object" && "ref" in node) {
      if (this.ignoreIdentity) return null;
      const target = this.anchors.get(node.ref);
      const emptyAtom = (target instanceof Tuple || (target instanceof Uint8Array && !(target instanceof ByteArray))) && (target as ArrayLike<unknown>).length === 0;
      if (emptyAtom) return this.compareValue(v, this.anchorNodes.get(node.ref), path, false);
      if (typeof target === "object" && target !== null) {
        return v === target ? null : `${path}: not the same object as anchor ${node.ref}`;
      }
      return Object.is(v, target) || (typeof v === "number" && v === target) ? null : `${path}: differs from anchor ${node.ref}`;
    }
    if (node !== null && typeof node === "object" && "anchor" in node) {
      this.anchors.set(node.anchor, v);
      this.anchorNodes.set(node.anchor, node.value);
      return this.compareValue(v, node.value, path, true);
    }
    return this.compareValue(v, node, path, false);
  }

  private claim(v: unknown, path: string, empty: boolean): string | null {
    if (this.ignoreIdentity || typeof v !== "object" || v === null || empty) return null;
    if (v instanceof OrderedDict || v instanceof Placeholder) {
      // enum members are single objects in Python; placeholders of ENUM may repeat
      if (v instanceof Placeholder && v.kind === "ENUM") return null;
    }
    if (this.seen.has(v)) return `${path}: the same object occurs twice without an anchor`;
    this.seen.add(v);
    return null;
  }

  private compareValue(v: unknown, node: any, path: string, anchored: boolean): string | null {
    void anchored;
    if (node === null) return v === null ? null : `${path}: expected None, got ${show(v)}`;
    if (typeof node === "boolean") return v === node ? null : `${path}: expected ${node}, got ${show(v)}`;
    if ("int" in node) {
      const want = BigInt(node.int);
      if (typeof v === "number" && Number.isInteger(v) && Number.isSafeInteger(v)) return BigInt(v) === want ? null : `${path}: expected ${node.int}, got ${v}`;
      if (typeof v === "bigint" && !(v >= -9007199254740991n && v <= 9007199254740991n)) return v === want ? null : `${path}: expected ${node.int}, got ${v}`;
      return `${path}: expected int ${node.int}, got ${show(v)}`;
    }
    if ("float" in node) {
      let x: number;
      if (v instanceof Float) {
        x = v.value;
        if (!Number.isInteger(x) && x === x) return `${path}: a non-integral float came as Float`;
      } else if (typeof v === "number" && !Number.isInteger(v)) x = v;
      else return `${path}: expected float, got ${show(v)}`;
      if (x !== x && v instanceof Float && v.nanBits) {
        return toHex(v.nanBits.slice().reverse()) === node.float ? null : `${path}: NaN bits differ`;
      }
      return floatBits(x) === node.float ? null : `${path}: expected float ${node.float}, got ${floatBits(x)}`;
    }
    if ("complex" in node) {
      if (!(v instanceof Complex)) return `${path}: expected complex, got ${show(v)}`;
      return floatBits(v.re) === node.complex[0] && floatBits(v.im) === node.complex[1] ? null : `${path}: complex differs`;
    }
    if ("str" in node || "str_cp" in node) {
      const want = "str" in node ? node.str : node.str_cp.map((c: number) => String.fromCodePoint(c)).join("");
      return v === want ? null : `${path}: expected str ${JSON.stringify(want)}, got ${show(v)}`;
    }
    if ("bytes" in node || "bytearray" in node) {
      const ba = "bytearray" in node;
      if (!(v instanceof Uint8Array) || (v instanceof ByteArray) !== ba) return `${path}: expected ${ba ? "bytearray" : "bytes"}, got ${show(v)}`;
      const e = this.claim(v, path, !ba && v.length === 0);
      if (e) return e;
      return toHex(v) === (node.bytes ?? node.bytearray) ? null : `${path}: bytes differ`;
    }
    if ("list" in node || "tuple" in node) {
      const isTuple = "tuple" in node;
      const items = node.list ?? node.tuple;
      if (!Array.isArray(v) || (v instanceof Tuple) !== isTuple) return `${path}: expected ${isTuple ? "tuple" : "list"}, got ${show(v)}`;
      const e = this.claim(v, path, isTuple && items.length === 0);
      if (e) return e;
      if (v.length !== items.length) return `${path}: length ${v.length}, expected ${items.length}`;
      for (let i = 0; i < items.length; i++) {
        const r = this.compare(v[i], items[i], `${path}[${i}]`);
        if (r) return r;
      }
      return null;
    }
    if ("set" in node || "frozenset" in node) {
      const frozen = "frozenset" in node;
      const items = node.set ?? node.frozenset;
      if (!(v instanceof Set) || (v instanceof FrozenSet) !== frozen) return `${path}: expected ${frozen ? "frozenset" : "set"}, got ${show(v)}`;
      const e = this.claim(v, path, false);
      if (e) return e;
      if (v.size !== items.length) return `${path}: size ${v.size}, expected ${items.length}`;
      // Elements in wire order = listed order for the vectors.
      const got = [...v];
      for (let i = 0; i < items.length; i++) {
        const r = this.compare(got[i], items[i], `${path}{${i}}`);
        if (r) return r;
      }
      return null;
    }
    if ("dict" in node) {
      if (!(v instanceof Map) || v.constructor !== Map) return `${path}: expected dict, got ${show(v)}`;
      return this.comparePairs(v, node.dict, path);
    }
    if ("ext" in node) return this.compareExt(v, node, path);
    if ("object" in node) {
      const o = node.object;
      if (!(v instanceof Placeholder)) return `${path}: expected object, got ${show(v)}`;
      if (v.module !== o.module || v.qualname !== o.qualname || v.kind !== o.kind) return `${path}: class differs`;
      if (JSON.stringify(v.fields) !== JSON.stringify(o.fields ?? null)) return `${path}: fields differ`;
      const e = this.claim(v, path, false);
      if (e) return e;
      if (v.values.length !== node.values.length) return `${path}: value count differs`;
      for (let i = 0; i < node.values.length; i++) {
        const r = this.compare(v.values[i], node.values[i], `${path}.${(o.fields ?? ["state"])[i]}`);
        if (r) return r;
      }
      return null;
    }
    return `${path}: unknown notation`;
  }

  private comparePairs(m: Map<unknown, unknown>, pairs: any[], path: string): string | null {
    const e = this.claim(m, path, false);
    if (e) return e;
    if (m.size !== pairs.length) return `${path}: ${m.size} pairs, expected ${pairs.length}`;
    const got = [...m];
    for (let i = 0; i < pairs.length; i++) {
      const r = this.compare(got[i][0], pairs[i][0], `${path}.key${i}`) ?? this.compare(got[i][1], pairs[i][1], `${path}[${i}]`);
      if (r) return r;
    }
    return null;
  }

  private compareExt(v: unknown, node: any, path: string): string | null {
    if ("blob" in node) {
      if (node.ext === "OUT_OF_BAND") return this.compareOutOfBand(v, node, path);
      if (node.ext === "SINGLETON") {
        // One object each (no identity to claim), like None.
        if (!(v instanceof PySingleton)) return `${path}: expected SINGLETON, got ${show(v)}`;
        return v.byte === parseInt(node.blob, 16) && node.blob.length === 2 ? null : `${path}: ${v.name}, expected blob ${node.blob}`;
      }
      if (!(v instanceof ExtBlobValue)) return `${path}: expected EXT ${node.ext}, got ${show(v)}`;
      if (EXT_NAMES[v.code] !== node.ext) return `${path}: EXT ${EXT_NAMES[v.code]}, expected ${node.ext}`;
      const e = this.claim(v, path, false);
      if (e) return e;
      return toHex(v.blob) === node.blob ? null : `${path}: blob ${toHex(v.blob)}, expected ${node.blob}`;
    }
    const values = node.values;
    const e = this.claim(v, path, false);
    if (e) return e;
    switch (node.ext) {
      case "NAMESPACE":
        if (!(v instanceof Namespace)) return `${path}: expected namespace`;
        return this.comparePairsNoClaim(v as Map<unknown, unknown>, values[0].dict, path);
      case "DEQUE":
        if (!(v instanceof Deque)) return `${path}: expected deque`;
        return this.compare(v.maxlen, values[0], `${path}.maxlen`) ?? this.compareItems(v.items, values[1], `${path}.items`);
      case "ORDERED_DICT":
      case "COUNTER":
        if (!(v instanceof (node.ext === "COUNTER" ? Counter : OrderedDict))) return `${path}: expected ${node.ext}`;
        return this.comparePairsNoClaim(v as Map<unknown, unknown>, values[0].dict, path);
      case "DEFAULTDICT":
        if (!(v instanceof DefaultDict)) return `${path}: expected defaultdict`;
        if ((v.factory ?? null) !== (values[0] === null ? null : values[0].str)) return `${path}: factory differs`;
        return this.comparePairsNoClaim(v, values[1].dict, path);
      case "FRACTION":
        if (!(v instanceof Fraction)) return `${path}: expected Fraction`;
        return this.compare(v.numerator, values[0], `${path}.numerator`) ?? this.compare(v.denominator, values[1], `${path}.denominator`);
      case "RANGE":
      case "SLICE": {
        if (!(v instanceof (node.ext === "RANGE" ? Range : Slice))) return `${path}: expected ${node.ext}`;
        const r = v as Range | Slice;
        return this.compare(r.start, values[0], `${path}.start`) ?? this.compare(r.stop, values[1], `${path}.stop`) ?? this.compare(r.step, values[2], `${path}.step`);
      }
    }
    return `${path}: unknown EXT ${node.ext}`;
  }

  private compareItems(items: unknown[], node: any, path: string): string | null {
    if (!("list" in node)) return `${path}: not a list node`;
    if (items.length !== node.list.length) return `${path}: length differs`;
    for (let i = 0; i < items.length; i++) {
      const r = this.compare(items[i], node.list[i], `${path}[${i}]`);
      if (r) return r;
    }
    return null;
  }

  private comparePairsNoClaim(m: Map<unknown, unknown>, pairs: any[], path: string): string | null {
    if (m.size !== pairs.length) return `${path}: ${m.size} pairs, expected ${pairs.length}`;
    const got = [...m];
    for (let i = 0; i < pairs.length; i++) {
      const r = this.compare(got[i][0], pairs[i][0], `${path}.key${i}`) ?? this.compare(got[i][1], pairs[i][1], `${path}[${i}]`);
      if (r) return r;
    }
    return null;
  }

  /** The vector's python expression and buffers say what an OUT_OF_BAND value is. */
  private compareOutOfBand(v: unknown, node: any, path: string): string | null {
    const py: string = node.python;
    const blob = hexBytes(node.blob);
    const index = blob[0];
    const buffer = this.buffers[index];
    if (py.startsWith("b'")) {
      if (!(v instanceof Uint8Array) || v instanceof ByteArray) return `${path}: expected bytes`;
      return toHex(v) === toHex(buffer) ? null : `${path}: bytes differ from buffer ${index}`;
    }
    if (py.startsWith("bytearray(")) {
      if (!(v instanceof ByteArray)) return `${path}: expected bytearray`;
      return toHex(v) === toHex(buffer) ? null : `${path}: bytearray differs`;
    }
    if (py.startsWith("array.array(")) {
      if (!(v instanceof PyArray)) return `${path}: expected array`;
      const tc = /array\.array\('(.)'/.exec(py)![1];
      return v.typecode === tc && toHex(v.data) === toHex(buffer) ? null : `${path}: array differs`;
    }
    if (py.startsWith("numpy.")) {
      if (!(v instanceof NDArray)) return `${path}: expected ndarray`;
      if (blob[2] === 4) {
        // Fortran order: the expected C-order elements are the literal's numbers, in order.
        const nums = (py.match(/\[\[(.*)\]\]/)?.[1] ?? "").split(/[^0-9.eE+-]+/).filter(Boolean).map(Number);
        const want = new Uint8Array(new Float64Array(nums).buffer);
        return toHex(v.data) === toHex(want) ? null : `${path}: ndarray elements differ (Fortran order)`;
      }
      return toHex(v.data) === toHex(buffer) ? null : `${path}: ndarray data differs`;
    }
    return `${path}: unknown OUT_OF_BAND expression ${py}`;
  }
}

function show(v: unknown): string {
  if (v === null) return "None";
  if (typeof v === "object") return (v as object).constructor?.name ?? "object";
  return `${typeof v} ${String(v).slice(0, 40)}`;
}

export { OBJECT_KINDS };

/** Decodes by the fast path and by the stack machine (which tracing uses): the same value,
 * or the same error at the same offset, which is returned (null when there is none). */
export function asTheMachine(payload: Uint8Array, options: object): DecodeError | null {
  let value: unknown, error: DecodeError | null = null;
  try {
    value = decode(payload, options);
  } catch (e) {
    if (!(e instanceof DecodeError)) throw e;
    error = e;
  }
  const t = trace(payload, options);
  if (error !== null || t.error !== null) {
    assert.equal(t.error?.kind, error?.kind);
    assert.equal(t.error?.offset, error?.offset);
    return error;
  }
  assert.deepStrictEqual(value, t.events[0].value);
  return null;
}

/** The smallest allocation budget with which `payload` decodes (with `options`), found by
 * bisection below `ceiling`; then every budget from there down by `span`, in steps of
 * `step`, fails with alloc_limit, by the fast path at the same offset as by the machine. */
export function budgetsBelowFailAsTheMachine(
  payload: Uint8Array,
  options: object,
  span: number,
  step: number,
  ceiling = 1 << 22,
): void {
  let spent = 0;
  for (let hi = ceiling; spent < hi;) {
    const mid = (spent + hi) >> 1;
    if (asTheMachine(payload, { ...options, maxAlloc: mid }) === null) hi = mid;
    else spent = mid + 1;
  }
  for (let maxAlloc = spent - 1; maxAlloc > 0 && maxAlloc > spent - span; maxAlloc -= step) {
    assert.equal(asTheMachine(payload, { ...options, maxAlloc })?.kind, "alloc_limit");
  }
}
