// What `amber inspect` and `amber stats` show, from the decoder's own walk (the events of a
// traced decode, with every check it makes): one line per value, or counts by type. The text
// follows the Python tool's format line for line, so the viewer and the CLI agree.

import { DecodeError } from "./errors.js";
import { BodyDecoder, type TraceEvent, type TraceInfo } from "./decode.js";
import { readSealed, openSealed, resolveKeys, signatureMatches, hmacSync, type OpenBody } from "./envelope.js";
import type { DecodeOptions } from "./api.js";
import { pyRepr, pyFloatRepr } from "./pyrepr.js";
import { Float } from "./types.js";

export const TYPE_OF_TAG: Record<string, string> = {
  SMALL_INT: "int", SMALL_NEG: "int", INT: "int", BIGINT: "int", NONE: "None", FALSE: "bool", TRUE: "bool",
  FLOAT32: "float", FLOAT64: "float", COMPLEX: "complex", SHORT_STR: "str", STR: "str", STR_SURROGATES: "str",
  BYTES: "bytes", BYTEARRAY: "bytearray", SHORT_LIST: "list", LIST: "list", PACKED_INT_LIST: "list",
  PACKED_FLOAT_LIST: "list", TUPLE_LIST: "list", RECORDS: "list", OBJECT_ROWS: "list", SHORT_TUPLE: "tuple", TUPLE: "tuple", SHORT_DICT: "dict",
  DICT: "dict", SET: "set", FROZENSET: "frozenset", EXT: "ext", OBJECT: "object", REF: "ref", SUPERSEDE: "supersede",
  // A float column's value in an OBJECT_ROWS: a float without a tag.
  column: "float",
};
const HEADER_LEN = 3;
const HEX_BYTES = 8;
const TEXT_CHARS = 40;
const BYTES_SHOWN = 16;
const ITEMS_SHOWN = 8;
const BIG_INT_BITS = 256;
/** What each value of the OBJECT kinds with several values is (spec 5.17.3), shown before it. */
const CALL_ROLES = ["state", "list items", "dict items"];
const VALUE_ROLES: Partial<Record<string, readonly string[]>> = {
  MUTABLE_SUBCLASS: ["builtin value", "state"],
  VALUE_SUBCLASS: ["builtin value", "state"],
  REDUCE: ["arguments", ...CALL_ROLES],
  NEWOBJ: ["arguments", ...CALL_ROLES],
  REDUCE_KW: ["call", ...CALL_ROLES],
  NEWOBJ_KW: ["call", ...CALL_ROLES],
  EXCEPTION: ["arguments", "state", "cause", "context", "suppress context"],
};

export interface Trace {
  events: TraceEvent[];
  values: number;
  error: DecodeError | null;
  /** The decompressed body, for a compressed payload (its offsets are body offsets). */
  body: Uint8Array | null;
}

/** Decodes `data` with tracing; never throws a DecodeError (it is in the result). */
export function trace(data: Uint8Array, options: DecodeOptions = {}): Trace {
  const events: TraceEvent[] = [];
  let body: OpenBody | null = null;
  try {
    const keys = options.keys?.length ? resolveKeys(options.keys) : null;
    const sealed = readSealed(data, keys);
    if (sealed.signed) {
      const signed = data.subarray(0, sealed.contentEnd);
      signatureMatches(sealed, sealed.candidates.map((s) => hmacSync(s, signed)));
    }
    body = openSealed(sealed, options);
    const hashBudget = 16 * Math.max(data.length, body.end - body.start) + (1 << 20);
    const dec = new BodyDecoder(body.buf, body.start, body.end, body.errorBase, { placeholders: true, ...options }, body.spent, body.maxAlloc, hashBudget);
    dec.tracer = events;
    dec.decode();
    return { events, values: events.length, error: null, body: body.decompressed ? body.buf : null };
  } catch (e) {
    if (!(e instanceof DecodeError)) throw e;
    return { events, values: events.length, error: e, body: body?.decompressed ? body.buf : null };
  }
}

function intText(v: number | bigint): string {
  const b = typeof v === "bigint" ? v : BigInt(v);
  const bits = (b < 0n ? -b : b).toString(2).length;
  if (b !== 0n && bits > BIG_INT_BITS) return `int of ${bits} bits`;
  return String(v);
}

function isInt(v: unknown): v is number | bigint {
  return typeof v === "bigint" || (typeof v === "number" && Number.isSafeInteger(v));
}

function valueText(v: unknown): string {
  if (typeof v === "string") {
    const shown = pyRepr(v.slice(0, TEXT_CHARS));
    return v.length > TEXT_CHARS ? `${shown}...` : shown;
  }
  if (v instanceof Uint8Array) {
    const shown = pyRepr(Uint8Array.from(v.subarray(0, BYTES_SHOWN)));
    return v.length > BYTES_SHOWN ? `${shown}...` : shown;
  }
  if (isInt(v)) return intText(v);
  if (v instanceof Float && Number.isNaN(v.value)) {
    // NaN: its bits tell NaNs apart
    const bits = v.nanBits ? Array.from(v.nanBits).reverse() : [0x7f, 0xf8, 0, 0, 0, 0, 0, 0];
    return `nan (bits ${bits.map((b) => b.toString(16).padStart(2, "0")).join("")})`;
  }
  return cut(pyRepr(v), 60);
}

function cut(text: string, limit: number): string {
  return text.length <= limit ? text : `${text.slice(0, limit - 3)}...`;
}

const count = (n: number, unit: string) => `${n} ${unit}${n === 1 ? "" : "s"}`;

/** What a value is, in a few words. */
export function summary(event: TraceEvent, base = 0): string {
  const info = event.info ?? (["scalar"] as TraceInfo);
  const complete = event.end !== null;
  const what = TYPE_OF_TAG[event.name] ?? event.name;
  let text: string;
  switch (info[0]) {
    case "scalar":
      text = complete ? valueText(event.value) : "(incomplete)";
      break;
    case "data": {
      const length = info[1];
      if (!complete) text = `${what} of ${length} bytes`;
      else if (what === "str" && (event.value as string).length > TEXT_CHARS) text = `${valueText(event.value)} (${length} bytes)`;
      else text = valueText(event.value);
      break;
    }
    case "container":
      text = `${what} of ${count(info[1], what === "dict" ? "pair" : "item")}`;
      break;
    case "packed": {
      const n = info[1];
      text = `list of ${count(n, event.name === "PACKED_INT_LIST" ? "int" : "float")}, packed`;
      if (complete && n) {
        const items = event.value as unknown[];
        text += `: ${items.slice(0, ITEMS_SHOWN).map(valueText).join(", ")}${items.length > ITEMS_SHOWN ? ", ..." : ""}`;
      }
      break;
    }
    case "tuple_list":
      text = `list of ${count(info[1], "tuple")} of ${count(info[2], "item")}, as rows`;
      break;
    case "records":
      text = `list of ${count(info[1], "dict")} of ${count(info[2], "key")}, as records`;
      break;
    case "object_rows": {
      const [, rows, number, defines, [module, qualname, , fields], columns] = info;
      text = `list of ${count(rows, "instance")} of ${module}:${qualname}, as object rows, shape ${number}`;
      if (defines) text += ` (defined here: ${fields!.join(", ")})`;
      if (columns.length) text += `; float ${columns.length === 1 ? "column" : "columns"}: ${columns.map((j) => fields![j]).join(", ")}`;
      break;
    }
    case "column":
      text = complete ? `${valueText(event.value)} (float column ${info[1]}: 8 bytes, no tag)` : "(incomplete)";
      break;
    case "ext":
      text = info[2] === null ? info[1] : `${info[1]}, ${count(info[2], "byte")}`;
      if (info[2] !== null && complete) text += `: ${valueText(event.value)}`;
      break;
    case "object": {
      const [, number, defines, [module, qualname, kind, fields]] = info;
      text = `${module}:${qualname} ${kind}, shape ${number}`;
      if (defines) text += fields && fields.length ? ` (defined here: ${fields.join(", ")})` : " (defined here)";
      break;
    }
    case "ref":
      text = `-> ${info[1] + base} (table #${info[2]})`;
      break;
    case "supersede":
      text = "its first value is dropped; the REF after it is the value";
      break;
  }
  if (event.tracked !== null) text += `  [tracked #${event.tracked}]`;
  return text;
}

function errorText(error: DecodeError, base = 0): string {
  let text = error.message;
  const prefix = `${error.kind} at offset ${error.offset}`;
  if (text.startsWith(`${prefix}: `)) text = text.slice(prefix.length + 2);
  else if (text === prefix) text = error.kind.replace(/_/g, " ");
  return `${text} (at byte ${error.offset + base}, ${error.kind})`;
}

/** The listing: a line for the header, one per value (at most maxLines), then how it ended. */
export function inspectLines(data: Uint8Array, result: Trace, options: { showHex?: boolean; maxLines?: number } = {}): string[] {
  const showHex = options.showHex ?? true;
  const out: string[] = [];
  let base = 0;
  const width = Math.max(6, String(data.length + base).length);
  const error = result.error;
  const line = (offset: number, raw: Uint8Array, depth: number, name: string, text: string) => {
    let column = "";
    if (showHex) {
      let shown = Array.from(raw.subarray(0, HEX_BYTES), (b) => b.toString(16).padStart(2, "0")).join(" ");
      if (raw.length > HEX_BYTES) shown += " ..";
      column = shown.padEnd(HEX_BYTES * 3 + 2);
    }
    return `${String(offset + base).padStart(width)}  ${column}${"  ".repeat(depth)}${name}  ${text}`;
  };
  let bytes = data;
  if (result.body !== null) {
    bytes = result.body;
    base = 0;
  } else if (error === null || error.offset >= HEADER_LEN) {
    const flags = data[2] & 0xf0;
    out.push(line(0, data.subarray(0, HEADER_LEN), 0, "HEADER", `version ${data[2] & 0x0f}${flags ? `, flags 0x${flags.toString(16).padStart(2, "0")}` : ""}`));
  }
  // [depth, arity, values met, keys, row] of each TUPLE_LIST, RECORDS or OBJECT_ROWS whose
  // rows are listed, innermost last (keys: the values before the rows, a RECORDS' keys; row:
  // what a row is). The rows have no tags: a line marks where each begins, at its first value.
  const tupleLists: [number, number, number, number, string][] = [];
  // [depth, roles, values met] of each OBJECT whose values are named, innermost last.
  const objects: [number, readonly string[], number][] = [];
  const limit = options.maxLines ?? Infinity;
  let shownEvents = 0;
  for (const event of result.events) {
    if (shownEvents >= limit) break;
    shownEvents++;
    while (objects.length && objects[objects.length - 1][0] >= event.depth) objects.pop();
    let role = "";
    if (objects.length && event.depth === objects[objects.length - 1][0] + 1) {
      const top = objects[objects.length - 1];
      role = top[2] < top[1].length ? `${top[1][top[2]]}: ` : "";
      top[2]++;
    }
    if (event.info !== null && event.info[0] === "object") {
      const roles = VALUE_ROLES[event.info[3][2]];
      if (roles) objects.push([event.depth, roles, 0]);
    }
    while (tupleLists.length && tupleLists[tupleLists.length - 1][0] >= event.depth) tupleLists.pop();
    if (tupleLists.length && event.depth === tupleLists[tupleLists.length - 1][0] + 2) {
      const top = tupleLists[tupleLists.length - 1];
      const [depth, arity, met, keys, row] = top;
      const none = new Uint8Array(0);
      if (keys && met === 0) out.push(line(event.offset, none, depth + 1, "keys of each row", count(keys, "key")));
      else if (met >= keys && (met - keys) % arity === 0) {
        out.push(line(event.offset, none, depth + 1, `row ${Math.floor((met - keys) / arity)}`, row));
      }
      top[2]++;
    }
    const info = event.info;
    if (info !== null && info[0] === "tuple_list" && info[1]) tupleLists.push([event.depth, info[2], 0, 0, `tuple of ${count(info[2], "item")}`]);
    if (info !== null && info[0] === "records") tupleLists.push([event.depth, info[2], 0, info[2], `dict of ${count(info[2], "pair")}`]);
    if (info !== null && info[0] === "object_rows" && info[1]) {
      const [, , , , [module, qualname, , fields]] = info;
      tupleLists.push([event.depth, fields!.length, 0, 0, `${module}:${qualname} of ${count(fields!.length, "field")}`]);
    }
    let headEnd = event.headEnd;
    if (headEnd === null) {
      const stop = error !== null ? error.offset : event.offset;
      headEnd = Math.max(stop, event.offset + 1);
    }
    out.push(line(event.offset, bytes.subarray(event.offset, headEnd), event.depth, event.name, role + summary(event, base)));
  }
  const hidden = result.values - shownEvents;
  if (hidden > 0) out.push(`... ${count(hidden, "more value").replace("more values", "more values")}`);
  if (error !== null) out.push(`error: ${errorText(error, base)}`);
  else out.push(`end: ${bytes.length} bytes, ${count(result.values, "value")}`);
  return out;
}

interface Count { count: number; bytes: number; total_bytes: number }

export interface Stats {
  size: number;
  values: number;
  maxDepth: number;
  tracked: number;
  shapes: number;
  types: Map<string, Count>;
  ext: Map<string, Count>;
  objects: Map<string, Count>;
  refs: number;
  refBytes: number;
  savedBytes: number;
}

function levelsOpened(info: TraceInfo | null): number {
  if (info === null) return 0;
  switch (info[0]) {
    case "tuple_list": case "records": case "object_rows": return 2;
    case "container": case "packed": case "object": case "supersede": return 1;
    case "ext": return info[2] === null ? 1 : 0;
    default: return 0;
  }
}

/** The statistics of a payload of `size` bytes from the events of a successful decode. */
export function stats(size: number, events: TraceEvent[]): Stats {
  const result: Stats = {
    size, values: events.length, maxDepth: 0, tracked: 0, shapes: 0, types: new Map(), ext: new Map(),
    objects: new Map(), refs: 0, refBytes: 0, savedBytes: 0,
  };
  const spans = events.map((e) => [e.offset, e.end ?? e.offset] as const);
  const spanAt = new Map<number, number>();
  for (const [o, e] of spans) spanAt.set(o, e - o);
  const own = spans.map(([o, e]) => e - o);
  const open: number[] = [];
  spans.forEach(([o, e], i) => {
    while (open.length && spans[open[open.length - 1]][1] <= o) open.pop();
    if (open.length) own[open[open.length - 1]] -= e - o;
    open.push(i);
  });
  const byName = new Map<string, [number, number, number]>();
  const add = (table: Map<string, Count>, key: string, ownBytes: number, total: number) => {
    const row = table.get(key) ?? { count: 0, bytes: 0, total_bytes: 0 };
    row.count++;
    row.bytes += ownBytes;
    row.total_bytes += total;
    table.set(key, row);
  };
  events.forEach((ev, i) => {
    const total = spanAt.get(ev.offset)!;
    const row = byName.get(ev.name) ?? [0, 0, 0];
    row[0]++;
    row[1] += own[i];
    row[2] += total;
    byName.set(ev.name, row);
    result.maxDepth = Math.max(result.maxDepth, ev.depth + levelsOpened(ev.info));
    if (ev.tracked !== null) result.tracked++;
    const info = ev.info;
    if (info === null) return;
    if (info[0] === "ext") add(result.ext, info[1], own[i], total);
    else if (info[0] === "object") {
      add(result.objects, `${info[3][0]}:${info[3][1]}`, own[i], total);
      if (info[2]) result.shapes++;
    } else if (info[0] === "object_rows") {
      // A list value (in the types table) whose rows are instances of the class without
      // events of their own: each counts as one, the list's own bytes (its head) going to
      // the class, as the Python tool counts them; a shape it defines counts.
      const key = `${info[4][0]}:${info[4][1]}`;
      const row = result.objects.get(key) ?? { count: 0, bytes: 0, total_bytes: 0 };
      row.count += info[1];
      row.bytes += own[i];
      row.total_bytes += total;
      result.objects.set(key, row);
      if (info[3]) result.shapes++;
    } else if (info[0] === "ref") {
      result.refs++;
      result.refBytes += own[i];
      result.savedBytes += (spanAt.get(info[1]) ?? 0) - own[i];
    }
  });
  for (const [name, [c, b, t]] of byName) {
    const key = TYPE_OF_TAG[name] ?? name;
    const row = result.types.get(key) ?? { count: 0, bytes: 0, total_bytes: 0 };
    row.count += c;
    row.bytes += b;
    row.total_bytes += t;
    result.types.set(key, row);
  }
  return result;
}

/** `stats` as a table for people. */
export function statsLines(result: Stats): string[] {
  const out = [`payload: ${result.size} bytes (${HEADER_LEN} header, ${result.size - HEADER_LEN} body), ${result.values} values, nesting depth ${result.maxDepth}`];
  const table = (title: string, counts: Map<string, Count>) => {
    if (!counts.size) return;
    out.push("");
    out.push(`${title.padEnd(24)} ${"values".padStart(9)} ${"bytes".padStart(11)} ${"share".padStart(7)} ${"with children".padStart(14)}`);
    const ordered = [...counts].sort((a, b) => b[1].bytes - a[1].bytes || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    for (const [name, c] of ordered) {
      const share = result.size ? (100 * c.bytes) / result.size : 0;
      out.push(`${cut(name, 24).padEnd(24)} ${String(c.count).padStart(9)} ${String(c.bytes).padStart(11)} ${share.toFixed(1).padStart(6)}% ${String(c.total_bytes).padStart(14)}`);
    }
  };
  table("type", result.types);
  table("EXT code", result.ext);
  table("class", result.objects);
  out.push("");
  out.push(`refs: ${result.refs} (${result.refBytes} bytes), saving ${result.savedBytes} bytes; identity table: ${result.tracked} entries; shapes: ${result.shapes}`);
  return out;
}

export { pyFloatRepr };
