// The EXT code table (spec 5.16): which codes are blobs, which composites, and how each is
// parsed, created, filled or built. A closed switch per concern, so a new code is a compile
// error in every place that must know it.

import { ExtCode } from "./base.js";
import { CLASS, PySingleton } from "../types.js";
import { InvalidExt } from "./blob_reader.js";
import { AmberDate, AmberTime, AmberDateTime, TimeDelta, TzInfo } from "./datetime.js";
import { Decimal } from "./decimal.js";
import { Uuid } from "./uuid.js";
import { PyArray } from "./array.js";
import { PyPath } from "./path.js";
import { IpAddress, IpNetwork, IpInterface } from "./ip.js";
import { NDArray, NumpyScalar } from "./ndarray.js";
import {
  Deque, Namespace, OrderedDict, Counter, DefaultDict, DEFAULTDICT_FACTORIES, type DefaultFactory, Range, Slice,
  reducedFraction, type PyInt,
} from "./composite.js";

export function isBlobCode(code: number): boolean {
  switch (code) {
    case ExtCode.FRACTION: case ExtCode.DEQUE: case ExtCode.ORDERED_DICT: case ExtCode.COUNTER:
    case ExtCode.DEFAULTDICT: case ExtCode.RANGE: case ExtCode.SLICE: case ExtCode.NAMESPACE:
      return false;
    default:
      return true;
  }
}

export function parseExtBlob(code: number, blob: Uint8Array): unknown {
  switch (code) {
    case ExtCode.DATE: return AmberDate.parse(blob);
    case ExtCode.TIME: return AmberTime.parse(blob);
    case ExtCode.DATETIME: return AmberDateTime.parse(blob);
    case ExtCode.TIMEDELTA: return TimeDelta.parse(blob);
    case ExtCode.TZINFO: return TzInfo.parse(blob);
    case ExtCode.DECIMAL: return Decimal.parse(blob);
    case ExtCode.UUID: return Uuid.parse(blob);
    case ExtCode.ARRAY: return PyArray.parse(blob);
    case ExtCode.PATH: return PyPath.parse(blob);
    case ExtCode.IP_ADDRESS: return IpAddress.parse(blob);
    case ExtCode.IP_NETWORK: return IpNetwork.parse(blob);
    case ExtCode.IP_INTERFACE: return IpInterface.parse(blob);
    case ExtCode.NDARRAY: return NDArray.parse(blob);
    case ExtCode.NUMPY_SCALAR: return NumpyScalar.parse(blob);
    case ExtCode.SINGLETON: {
      if (blob.length !== 1) throw new InvalidExt(`SINGLETON blob has ${blob.length} bytes, not 1`);
      if (blob[0] > 1) throw new InvalidExt(`SINGLETON byte ${blob[0]} names no constant (0 Ellipsis, 1 NotImplemented)`);
      return blob[0] === 0 ? PySingleton.Ellipsis : PySingleton.NotImplemented;
    }
    default: throw new Error(`EXT code ${code} has no blob parser`);
  }
}

/** How many values follow a composite code. */
export function compositeValueCount(code: number): number {
  switch (code) {
    case ExtCode.FRACTION: case ExtCode.DEQUE: case ExtCode.DEFAULTDICT: return 2;
    case ExtCode.ORDERED_DICT: case ExtCode.COUNTER: case ExtCode.NAMESPACE: return 1;
    case ExtCode.RANGE: case ExtCode.SLICE: return 3;
    default: throw new Error(`EXT code ${code} is not a composite`);
  }
}

/** The empty object of a create-first code, or null for a build-after one. */
export function createComposite(code: number): object | null {
  switch (code) {
    case ExtCode.DEQUE: return new Deque();
    case ExtCode.ORDERED_DICT: return new OrderedDict();
    case ExtCode.COUNTER: return new Counter();
    case ExtCode.DEFAULTDICT: return new DefaultDict();
    case ExtCode.NAMESPACE: return new Namespace();
    default: return null;
  }
}

const isInt = (v: unknown): v is PyInt => (typeof v === "number" && Number.isInteger(v)) || typeof v === "bigint";
const kindOf = (v: unknown) => (v === null ? "None" : v instanceof Map ? "a dict" : Array.isArray(v) ? "a list" : typeof v);

function dictItems(what: string, v: unknown): Map<unknown, unknown> {
  // A dict as the decoder made it: a Map (not an OrderedDict or Counter, Map subclasses too),
  // or with dicts: "object" a plain object that is not a class record.
  if (v instanceof Map && v.constructor === Map) return v;
  if (typeof v === "object" && v !== null && (v as Record<symbol, unknown>)[CLASS] === undefined) {
    const proto = Object.getPrototypeOf(v);
    if (proto === Object.prototype || proto === null) {
      const rec = v as Record<string, unknown>;
      return new Map(Object.keys(rec).map((k) => [k, rec[k]]));
    }
  }
  throw new InvalidExt(`${what}: items are ${kindOf(v)}, not a dict`);
}

/** Gives a create-first object its complete values (spec 5.16.4). */
export function finishComposite(code: number, obj: any, values: unknown[]): void {
  switch (code) {
    case ExtCode.DEQUE: {
      const [maxlen, items] = values;
      if (maxlen !== null && (!isInt(maxlen) || maxlen < 0 || BigInt(maxlen) > 0x7fffffffffffffffn)) {
        throw new InvalidExt(`DEQUE: maxlen ${String(maxlen)} is not None or an int 0..2^63-1`);
      }
      if (!Array.isArray(items) || items.constructor !== Array) throw new InvalidExt(`DEQUE: items are ${kindOf(items)}, not a list`);
      const d = obj as Deque;
      d.maxlen = maxlen as PyInt | null;
      const keep = maxlen === null ? items : items.slice(Math.max(0, items.length - Number(maxlen)));
      d.items.push(...keep);
      return;
    }
    case ExtCode.ORDERED_DICT:
    case ExtCode.COUNTER: {
      const items = dictItems(code === ExtCode.COUNTER ? "COUNTER" : "ORDERED_DICT", values[0]);
      for (const [k, v] of items) (obj as Map<unknown, unknown>).set(k, v);
      return;
    }
    case ExtCode.NAMESPACE: {
      const items = dictItems("NAMESPACE", values[0]);
      for (const k of items.keys()) {
        if (typeof k !== "string") throw new InvalidExt(`NAMESPACE: an attribute name is ${kindOf(k)}, not a str`);
      }
      for (const [k, v] of items) (obj as Namespace).set(k as string, v);
      return;
    }
    case ExtCode.DEFAULTDICT: {
      const [factory, raw] = values;
      if (factory !== null && !(typeof factory === "string" && (DEFAULTDICT_FACTORIES as readonly string[]).includes(factory))) {
        // The factory is any decoded value (a BigInt, a cycle): name its kind, never serialize it.
        const what = typeof factory === "string" ? JSON.stringify(factory) : `a non-str value (${kindOf(factory)})`;
        throw new InvalidExt(`DEFAULTDICT: factory ${what} is not None or a listed builtin`);
      }
      const items = dictItems("DEFAULTDICT", raw);
      for (const [k, v] of items) (obj as DefaultDict).set(k, v);
      (obj as DefaultDict).factory = factory as DefaultFactory;
      return;
    }
    default:
      throw new Error(`EXT code ${code} is not create-first`);
  }
}

const MAX_FRACTION_BITS = 1 << 16;
function bits(v: PyInt): number {
  const b = typeof v === "bigint" ? v : BigInt(v);
  return (b < 0n ? -b : b).toString(2).length;
}

/** Builds a build-after value from its complete values (spec 5.16.4). */
export function buildComposite(code: number, values: unknown[]): unknown {
  switch (code) {
    case ExtCode.FRACTION: {
      const [n, d] = values;
      if (!isInt(n)) throw new InvalidExt(`FRACTION: numerator is ${kindOf(n)}, not an int`);
      if (!isInt(d)) throw new InvalidExt(`FRACTION: denominator is ${kindOf(d)}, not an int`);
      if (d <= 0) throw new InvalidExt(`FRACTION: denominator ${d} is not positive`);
      if (bits(n) > MAX_FRACTION_BITS || bits(d) > MAX_FRACTION_BITS) throw new InvalidExt("FRACTION: an operand is longer than 2^16 bits");
      return reducedFraction(n, d);
    }
    case ExtCode.RANGE: {
      const [start, stop, step] = values;
      for (const [name, v] of [["start", start], ["stop", stop], ["step", step]] as const) {
        if (!isInt(v)) throw new InvalidExt(`RANGE: ${name} is ${kindOf(v)}, not an int`);
      }
      if (step === 0) throw new InvalidExt("RANGE: step is 0");
      return new Range(start as PyInt, stop as PyInt, step as PyInt);
    }
    case ExtCode.SLICE:
      return new Slice(values[0], values[1], values[2]);
    default:
      throw new Error(`EXT code ${code} is not build-after`);
  }
}
