// The JSON mapping (spec/json-mapping.md), writer side: what `amber to-json` writes, with
// tagged forms for everything JSON has no type for, and $id / $ref for shared values.

import { Tuple, FrozenSet, ByteArray, Complex, Float, Placeholder, CLASS, PySingleton } from "./types.js";
import type { ClassInfo } from "./object.js";
import { AmberDate, AmberTime, AmberDateTime, TimeDelta, TzInfo, type Tz } from "./ext/datetime.js";
import { Decimal } from "./ext/decimal.js";
import { Uuid } from "./ext/uuid.js";
import { PyPath } from "./ext/path.js";
import { IpAddress, IpNetwork, IpInterface } from "./ext/ip.js";
import { PyArray } from "./ext/array.js";
import { NDArray, NumpyScalar } from "./ext/ndarray.js";
import { ExtBlobValue } from "./ext/base.js";
import { Deque, Namespace, OrderedDict, Counter, DefaultDict, Fraction, Range, Slice } from "./ext/composite.js";
import { pyFloatRepr, decimalText } from "./pyrepr.js";
import { hasLoneSurrogate } from "./utf8.js";

const MAX_SAFE = 2 ** 53 - 1;

function base64(b: Uint8Array): string {
  let s = "";
  for (let i = 0; i < b.length; i += 0x8000) s += String.fromCharCode.apply(null, b.subarray(i, i + 0x8000) as unknown as number[]);
  return btoa(s);
}

/** Whether a value has an identity in the mapping (json-mapping 6.1). */
function hasIdentity(v: unknown): v is object {
  if (typeof v !== "object" || v === null) return false;
  if (v instanceof Float || v instanceof Complex || v instanceof PySingleton) return false;
  if (v instanceof Tuple && v.length === 0) return false;
  if (v instanceof Uint8Array && !(v instanceof ByteArray) && v.length === 0) return false;
  return true;
}

function children(v: object): unknown[] {
  const proto = Object.getPrototypeOf(v);
  if (proto === Object.prototype || proto === null) return Object.values(v);
  if (Array.isArray(v)) return v;
  if (v instanceof Map) return [...v].flat();
  if (v instanceof Set) return [...v];
  if (v instanceof Deque) return v.items;
  if (v instanceof Placeholder) return v.values;
  if (v instanceof Slice) return [v.start, v.stop, v.step];
  return [];
}

function floatJson(x: number, nanBits: Uint8Array | null = null): string {
  if (Number.isFinite(x)) return pyFloatRepr(x);
  if (x === Infinity) return '{"$float":"inf"}';
  if (x === -Infinity) return '{"$float":"-inf"}';
  const bits = nanBits ? Array.from(nanBits).reverse() : [0x7f, 0xf8, 0, 0, 0, 0, 0, 0];
  const hex = bits.map((b) => b.toString(16).padStart(2, "0")).join("");
  return hex === "7ff8000000000000" ? '{"$float":"nan"}' : `{"$float":"${hex}"}`;
}

function intJson(v: number | bigint): string {
  const b = BigInt(v);
  if (b >= -BigInt(MAX_SAFE) && b <= BigInt(MAX_SAFE)) return String(v);
  const bits = (b < 0n ? -b : b).toString(2).length;
  if (bits <= 14000) return `{"$int":"${b}"}`;
  return `{"$int":"${b < 0n ? "-" : ""}0x${(b < 0n ? -b : b).toString(16)}"}`;
}

function textJson(s: string): string {
  if (!hasLoneSurrogate(s)) return JSON.stringify(s);
  const parts: string[] = [];
  let run = "";
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && s.charCodeAt(i + 1) >= 0xdc00 && s.charCodeAt(i + 1) <= 0xdfff) {
      run += s[i] + s[i + 1];
      i++;
    } else if (c >= 0xd800 && c <= 0xdfff) {
      if (run) parts.push(JSON.stringify(run));
      run = "";
      parts.push(String(c));
    } else run += s[i];
  }
  if (run) parts.push(JSON.stringify(run));
  return `{"$str":[${parts.join(",")}]}`;
}

const pad = (n: number, w: number) => String(n).padStart(w, "0");

function offsetText(us: number): string {
  const sign = us < 0 ? "-" : "+";
  let r = Math.abs(us);
  const h = Math.floor(r / 3_600_000_000); r -= h * 3_600_000_000;
  const m = Math.floor(r / 60_000_000); r -= m * 60_000_000;
  const s = Math.floor(r / 1_000_000); r -= s * 1_000_000;
  return `${sign}${pad(h, 2)}:${pad(m, 2)}${s || r ? `:${pad(s, 2)}` : ""}${r ? `.${pad(r, 6)}` : ""}`;
}

function tzJson(tz: Tz): string {
  switch (tz.kind) {
    case "utc": return '{"$timezone":"utc"}';
    case "zone": return `{"$zoneinfo":${JSON.stringify(tz.key)}}`;
    case "fixed":
      if (tz.offsetMicroseconds === 0 && tz.name === null) return '{"$timezone":"utc"}';
      return `{"$timezone":{"offset":"${offsetText(tz.offsetMicroseconds)}"${tz.name !== null ? `,"name":${textJson(tz.name)}` : ""}}}`;
  }
}

const clock = (h: number, m: number, s: number, us: number) => `${pad(h, 2)}:${pad(m, 2)}:${pad(s, 2)}${us ? `.${pad(us, 6)}` : ""}`;

/** Writes a value as a JSON document (json-mapping.md), compact as `amber to-json` writes it. */
export function toJson(root: unknown): string {
  // Pass 1: the values with an identity met more than once.
  const seen = new Set<object>();
  const shared = new Set<object>();
  const stack: unknown[] = [root];
  while (stack.length) {
    const v = stack.pop();
    if (!hasIdentity(v)) continue;
    if (seen.has(v)) { shared.add(v); continue; }
    seen.add(v);
    const c = children(v);
    for (let i = c.length - 1; i >= 0; i--) stack.push(c[i]);
  }
  const ids = new Map<object, number>();
  const write = (v: unknown): string => {
    switch (typeof v) {
      case "string": return textJson(v);
      case "number": return Number.isSafeInteger(v) && !Object.is(v, -0) ? String(v) : floatJson(v);
      case "bigint": return intJson(v);
      case "boolean": return v ? "true" : "false";
      default: break;
    }
    if (v === null || v === undefined) return "null";
    if (v instanceof Float) return floatJson(v.value, v.nanBits);
    if (v instanceof Complex) return `{"$complex":[${floatJson(v.re)},${floatJson(v.im)}]}`;
    if (v instanceof PySingleton) return `{"$singleton":"${v.name}"}`;
    const obj = v as object;
    const id = ids.get(obj);
    if (id !== undefined) return `{"$ref":${id}}`;
    let idText = "";
    if (shared.has(obj)) {
      const n = ids.size + 1;
      ids.set(obj, n);
      idText = `"$id":${n},`;
    }
    const tagged = (tag: string, content: string, params = "") => `{${idText}"${tag}":${content}${params}}`;
    const items = (xs: Iterable<unknown>) => `[${Array.from(xs, write).join(",")}]`;
    const pairs = (m: Map<unknown, unknown>) => {
      const fields = [...m.keys()].every((k) => typeof k === "string" && !hasLoneSurrogate(k));
      if (fields) return `{${[...m].map(([k, x]) => `${JSON.stringify((k as string).startsWith("$") ? `$${k}` : k)}:${write(x)}`).join(",")}}`;
      return `[${[...m].map(([k, x]) => `[${write(k)},${write(x)}]`).join(",")}]`;
    };
    if (obj instanceof Tuple) return tagged("$tuple", items(obj));
    if (Array.isArray(obj)) return idText ? tagged("$list", items(obj)) : items(obj);
    if (obj instanceof ByteArray) return tagged("$bytearray", JSON.stringify(base64(obj)));
    if (obj instanceof Uint8Array) return tagged("$bytes", JSON.stringify(base64(obj)));
    if (obj instanceof FrozenSet) return tagged("$frozenset", items(obj));
    if (obj instanceof Set) return tagged("$set", items(obj));
    if (obj instanceof OrderedDict) return tagged("$ordereddict", pairs(obj));
    if (obj instanceof Counter) return tagged("$counter", pairs(obj));
    if (obj instanceof Namespace) return tagged("$namespace", pairs(obj));
    if (obj instanceof DefaultDict) return tagged("$defaultdict", pairs(obj), obj.factory ? `,"factory":"${obj.factory}"` : "");
    if (obj instanceof Map) {
      const plain = !idText && [...obj.keys()].every((k) => typeof k === "string" && !hasLoneSurrogate(k));
      return plain ? pairs(obj) : tagged("$dict", pairs(obj));
    }
    if (obj instanceof Deque) return tagged("$deque", items(obj.items), obj.maxlen !== null ? `,"maxlen":${obj.maxlen}` : "");
    if (obj instanceof Range) return tagged("$range", `[${intJson(obj.start)},${intJson(obj.stop)},${intJson(obj.step)}]`);
    if (obj instanceof Slice) return tagged("$slice", items([obj.start, obj.stop, obj.step]));
    if (obj instanceof Fraction) return tagged("$fraction", `[${intJson(obj.numerator)},${intJson(obj.denominator)}]`);
    if (obj instanceof Placeholder) {
      // The state by kind (json-mapping 5.8): fields, the one value, none (GLOBAL), or an
      // array of the values.
      const name = JSON.stringify(`${obj.module}:${obj.qualname}`);
      if (obj.kind === "GLOBAL") return tagged("$object", name, `,"kind":"GLOBAL"`);
      const single = obj.kind === "STATE" || obj.kind === "ENUM" || obj.kind === "CUSTOM";
      const state = obj.fields !== null
        ? `{${obj.fields.map((f, i) => `${JSON.stringify(f.startsWith("$") ? `$${f}` : f)}:${write(obj.values[i])}`).join(",")}}`
        : single ? write(obj.values[0]) : items(obj.values);
      return tagged("$object", name, `,"kind":"${obj.kind}","state":${state}`);
    }
    if (obj instanceof ExtBlobValue) return extJson(obj, tagged);
    const proto = Object.getPrototypeOf(obj);
    if (proto === Object.prototype || proto === null) {
      const rec = obj as Record<string, unknown>;
      const info = (obj as Record<symbol, ClassInfo>)[CLASS];
      if (info !== undefined) {
        const fields = info.fields ?? [];
        return tagged("$object", JSON.stringify(`${info.module}:${info.qualname}`), `,"kind":"ATTRS","state":{${fields.map((f) => `${JSON.stringify(f.startsWith("$") ? `$${f}` : f)}:${write(rec[f])}`).join(",")}}`);
      }
      const m = new Map(Object.keys(rec).map((k) => [k, rec[k]]));
      return idText ? tagged("$dict", pairs(m)) : pairs(m);
    }
    return tagged("$unknown", JSON.stringify(String(obj)));
  };
  return write(root);
}

function extJson(v: ExtBlobValue, tagged: (tag: string, content: string, params?: string) => string): string {
  const tzParams = (tz: Tz | null, fold: number) => `${tz ? `,"tz":${tzJson(tz)}` : ""}${fold ? ',"fold":1' : ""}`;
  if (v instanceof AmberDate) return tagged("$date", `"${pad(v.year, 4)}-${pad(v.month, 2)}-${pad(v.day, 2)}"`);
  if (v instanceof AmberTime) return tagged("$time", `"${clock(v.hour, v.minute, v.second, v.microsecond)}"`, tzParams(v.tz, v.fold));
  if (v instanceof AmberDateTime) {
    return tagged("$datetime", `"${pad(v.year, 4)}-${pad(v.month, 2)}-${pad(v.day, 2)}T${clock(v.hour, v.minute, v.second, v.microsecond)}"`, tzParams(v.tz, v.fold));
  }
  if (v instanceof TimeDelta) return tagged("$timedelta", `{"days":${v.days},"seconds":${v.seconds},"microseconds":${v.microseconds}}`);
  if (v instanceof TzInfo) {
    const inner = tzJson(v.tz);
    const m = /^\{"(\$\w+)":(.*)\}$/.exec(inner)!;
    return tagged(m[1], m[2]);
  }
  if (v instanceof Decimal) return tagged("$decimal", JSON.stringify(decimalText(v)));
  if (v instanceof Uuid) return tagged("$uuid", `"${v.toString()}"`, v.isSafe !== "unknown" ? `,"is_safe":"${v.isSafe}"` : "");
  if (v instanceof PyPath) return tagged("$path", textJson(v.path), `,"class":"${v.flavour}"`);
  if (v instanceof IpAddress) return tagged("$ip_address", JSON.stringify(v.toString()));
  if (v instanceof IpNetwork) return tagged("$ip_network", JSON.stringify(v.toString()));
  if (v instanceof IpInterface) return tagged("$ip_interface", JSON.stringify(v.toString()));
  if (v instanceof PyArray) return tagged("$array", JSON.stringify(v.typecode), `,"data":"${base64(v.data)}"`);
  const dtype = (d: string) => (d.startsWith("[") ? d : JSON.stringify(d));
  if (v instanceof NDArray) return tagged("$ndarray", dtype(v.dtype), `,"shape":[${v.shape.join(",")}],"data":"${base64(v.data)}"`);
  if (v instanceof NumpyScalar) return tagged("$numpy", dtype(v.dtype), `,"data":"${base64(v.data)}"`);
  return tagged("$ext", `"${v.extName}"`);
}
