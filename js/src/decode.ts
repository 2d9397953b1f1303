// The decode driver (spec sections 4 to 8): one loop over the body with an explicit stack of
// open containers, so that nesting to max_depth 10000 never touches the JS call stack. Every
// check runs in the order of spec 8.4, and every error carries the absolute offset.

import { decodeError, ClassNotAllowedError, DecodeError } from "./errors.js";
import { VarintReader } from "./varint.js";
import { decodeUtf8, decodeUtf8Surrogates, encodeUtf8, hasLoneSurrogate } from "./utf8.js";
import { asciiString, AsciiWindow } from "./ascii.js";
import { cost, SMALL_INT_MIN, SMALL_INT_MAX } from "./limits.js";
import { Tuple, FrozenSet, ByteArray, Complex, Float, Placeholder, OBJECT_KINDS, CLASS, creationOf, type ObjectKind } from "./types.js";
import { ExtCode, EXT_NAMES, MAX_EXT_CODE } from "./ext/base.js";
import { parseExtBlob, isBlobCode, compositeValueCount, createComposite, finishComposite, buildComposite } from "./ext/index.js";
import { InvalidExt } from "./ext/blob_reader.js";
import { parseOutOfBand, fortranToC } from "./ext/out_of_band.js";
import { PyArray } from "./ext/array.js";
import { NDArray } from "./ext/ndarray.js";
import {
  type AllowedClass, type ClassInfo, type Shape, type ValueClass, isDottedName, MAX_NAME, MAX_FIELDS, valueCount, valueRule, hasValueRules,
  inFixedTables, baseFits, BUILTIN_BASES, describeClass,
} from "./object.js";
import { KeyTable, keyProblem } from "./keys.js";

export const DEFAULT_MAX_DEPTH = 1000;
export const HARD_MAX_DEPTH = 10000;

/** Options of the body decoder (the envelope's options are in envelope.ts). */
export interface ValueOptions {
  /** Deepest nesting of containers; default 1000, at most 10000. */
  maxDepth?: number;
  /** Allocation budget in estimated bytes; default 256 x input length + 1 MiB. */
  maxAlloc?: number;
  /** Out-of-band buffers, in the order the payload numbers them. */
  buffers?: readonly Uint8Array[];
  /** Classes the caller allows, by "module:qualname". */
  types?: readonly AllowedClass[];
  /** Stand in for classes not allowed with Placeholder objects instead of failing. */
  placeholders?: boolean | "plain";
  /** What to do with a payload field that an allowed class does not declare. */
  unknownFields?: "ignore" | "error";
  /** "map" (default): every dict is a Map. "object": a dict whose keys are all strs that
   * are not array indexes ("0", "17": a JS object would reorder them) and that no REF
   * refers to is a plain object, several times faster to make; any other dict is a Map. */
  dicts?: "map" | "object";
}

/** A str key that a JS object would move to the front (an array index). */
function isIndexKey(k: string): boolean {
  const c = k.charCodeAt(0);
  if (c < 48 || c > 57 || k.length > 10 || (c === 48 && k.length > 1)) return false;
  for (let i = 1; i < k.length; i++) {
    const d = k.charCodeAt(i);
    if (d < 48 || d > 57) return false;
  }
  return Number(k) < 4294967295;
}

const hasOwn = Object.prototype.hasOwnProperty;

const enum F {
  List, Tuple, Dict, ObjectDict, DictRecord, PlainRecord, RecordValues, Set, FrozenSet, TupleList, Records, ObjectRows, Supersede, ExtCreateFirst, ExtBuildAfter, ObjectFirst, ObjectAfter, ObjectFromFirst,
}

class Frame {
  type: F = F.List;
  container: any = null;
  remaining = 0;
  /** Absolute offset of the tag, for errors reported when the value completes. */
  at = 0;
  /** Body offset of a tracked built-after value, else -1. */
  trackOff = -1;
  /** Dict: whether the next value is a key; the key itself. */
  expectKey = true;
  key: unknown = undefined;
  /** Dict and sets: the absolute offset of the current key's or element's first byte. */
  childAt = 0;
  keys: KeyTable | null = null;
  /** TUPLE_LIST: the row being filled, its arity and the next item's index in it. */
  row: Tuple | null = null;
  /** RECORDS: the list (the container holds the keys for their checks), the keys read so
   * far, and how a row is made from its values (see Decoder.recordsRow). */
  list: unknown[] | null = null;
  recordKeys: unknown[] | null = null;
  rowsAsObjects = false;
  rowMaker: ((v: unknown[]) => object) | null = null;
  /** OBJECT_ROWS: 1 for each field that is a float column, 0 for a tagged one; null when
   * there are no float columns. (`list`, `shape`, `arity` the fields, `rowIndex` the next
   * field, `values` the row's values.) */
  columns: Uint8Array | null = null;
  arity = 0;
  rowIndex = 0;
  /** Lists and tuples: the declared count (items go to index count - remaining). */
  count = 0;
  /** EXT composites and objects: code or shape, and the values collected. */
  code = 0;
  shape: Shape | null = null;
  values: unknown[] | null = null;
  /** SUPERSEDE: whether A is complete. */
  gotA = false;
  /** When tracing: the event of this value. */
  event: TraceEvent | null = null;
  /** RecordValues and DictRecord: arrays kept with the frame, reused from record to record. */
  scratch: unknown[] | null = null;
  keyScratch: string[] | null = null;
  /** DictRecord: the trie node of the keys so far, when the fast path read them. */
  node: KeyNode | null = null;
  /** Dicts and sets: number and bigint keys seen, and their V8 hash buckets (hash flooding). */
  hashedKeys = 0;
  hashCounts: Uint8Array | null = null;
}

/** The generated readers' charge of c bytes for the value at `at`: charge() written out, as
 * a generated reader is too large for V8 to inline the calls it makes (it inlines up to a
 * budget of bytecode per function); charge() called per key and value was 3% of
 * rowset_1000's profile. */
function CHARGE(c: number | string, at: string): string {
  return `if ((d.spent += ${c}) > d.maxAlloc) d.overBudget(${at});`;
}

/** The generated readers' branches for the commonest values after small ints (b, e, dv, p,
 * t and x in scope, t the tag at p, which is inside the input): a SHORT_STR by its reader;
 * a FLOAT64 holding a non-integral number (of the fast path's checks, charge and result;
 * any other float, and one the input cannot hold, by the fast path); as the fast path
 * takes them (no charge), SMALL_NEG, None, False and True; an INT of one to three varint
 * bytes inline (u and w in scope too; ids of up to a million), a longer one (or one the
 * input may not hold) by int(); a STR of a one-byte length by str(); a SHORT_LIST by
 * shortList() and, in object mode, a SHORT_DICT by fastRecord(), each up to FAST_DEPTH as
 * fastTag reads them (`place`: the statement setting d.place, as the caller's fallback
 * sets it): a record's nested dicts and lists (dto_1000's data and backoff, a product's
 * price, tags, ...) then skip fast() and fastTag's dispatch, 4 to 6% of the instructions
 * of dto_1000's and product_catalog's decodes. */
function VALUE_READS(v: string, place = ""): string {
  return `else if (t < 0x58) { ${v} = d.shortStr(t - 0x40, p); p = d.pos; }
    else if (t === 0x6e && e - p > 8 && !Number.isInteger(x = dv.getFloat64(p + 1, true)) && x === x) { ${CHARGE(cost.SCALAR, "p")} ${v} = x; p += 9; }
    else if (t >= 0x80 && t < 0x93) { ${v} = t < 0x90 ? t - 0x90 : t === 0x90 ? null : t === 0x92; p++; }
    else if (t === 0x6c && e - p > 3 && ((x = b[p + 1]) < 0x80 || ((u = b[p + 2]) < 0x80 ? u !== 0 : (w = b[p + 3]) < 0x80 && w !== 0))) {
      ${CHARGE(cost.SCALAR, "p")}
      if (x < 0x80) p += 2; else if (u < 0x80) { x = (x & 0x7f) | (u << 7); p += 3; } else { x = (x & 0x7f) | ((u & 0x7f) << 7) | (w << 14); p += 4; }
      ${v} = (x >>> 1) ^ -(x & 1); }
    else if (t === 0x6c) { ${v} = d.int(p); p = d.pos; }
    else if (t === 0x68 && e - p > 1 && (x = b[p + 1]) < 0x80) { ${v} = d.str(x, p, p + 2, false); p = d.pos; }
    else if (t >= 0x58 && t < 0x5c && d.depth < ${FAST_DEPTH}) { ${place} ${v} = d.shortList(t - 0x58, p); p = d.pos; }
    else if (t > 0x60 && t < 0x68 && d.objectDicts && d.depth < ${FAST_DEPTH}) { d.pos = p + 1; ${place} ${v} = d.fastRecord(t - 0x60, p, false); p = d.pos; }`;
}

type RecordMaker = (values: unknown[], info: ClassInfo) => object;
/** Reads the values of a plain record of one field list at the decoder's position (each a
 * small int inline, else by the fast path) and makes the record. */
type RecordRead = (d: BodyDecoder, info: ClassInfo) => object;
/** RecordRead for a row of an OBJECT_ROWS (spec 5.17.9): a field marked in `columns` is a
 * float column's 8 bytes. */
type RowRecordRead = (d: BodyDecoder, info: ClassInfo, columns: Uint8Array) => object;

/** Record makers and readers by field list, shared by all decodes (a payload's shapes are
 * its own, but the classes recur from payload to payload); bounded, past it new field lists
 * are not kept. */
const recordMakers = new Map<string, { make: RecordMaker; read: RecordRead; readRow: RowRecordRead } | null>();
const MAX_RECORD_MAKERS = 4096;
/** One record of each maker, of undefined fields, kept so that its hidden class lives: V8
 * holds the classes made by adding properties weakly, and when a full GC finds no record of
 * one left it drops the class, and with it the optimized decoder code that knew it. */
const recordSamples: object[] = [];

/** The functions that make a plain record of a shape (sets shape.factory and shape.read), or
 * null where that cannot be done (a field named __proto__, too many fields, code generation
 * refused by a content security policy). Both call one constructor of the fields' values
 * and the class, whose prototype is Object.prototype, so its objects are plain and of one
 * hidden class: it sets the fields, then the CLASS symbol, measured a third faster than an
 * object literal, which a computed (symbol) key takes off V8's fast literal path. The reader,
 * unrolled, keeps the values in locals: no array between the input and the record. */
function recordFactory(shape: Shape): RecordMaker | null {
  if (shape.factory !== undefined) return shape.factory;
  const fields = shape.fields!;
  // JSON, not a join: a field name may hold any character, NUL included.
  const key = JSON.stringify(fields);
  let made = recordMakers.get(key);
  if (made === undefined) {
    made = null;
    if (fields.length <= 64 && !fields.includes("__proto__")) {
      try {
        const args = [...fields.map((_, i) => `a${i}`), "I"].join(", ");
        const sets = fields.map((f, i) => `this[${JSON.stringify(f)}] = a${i};`).join(" ");
        let body = "const b = d.buf, e = d.end, dv = d.dv(); let p = d.pos, t = 0, x = 0, u = 0, w = 0;\n";
        // A row's float column: 8 bytes read in place when they hold a float with a fractional
        // part (nearly all); an integral one, a NaN or a cut-short input by columnFloat.
        let rowBody = body;
        for (let i = 0; i < fields.length; i++) {
          const value = `t = p < e ? b[p] : 0xff; if (t < 0x40) { v${i} = t; p++; } ${VALUE_READS(`v${i}`)} else { d.pos = p; v${i} = d.fast(); p = d.pos; }`;
          body += `let v${i}; ${value}\n`;
          rowBody += `let v${i}; if (K[${i}] !== 0) { x = e - p >= 8 ? dv.getFloat64(p, true) : 0; `;
          rowBody += `if (e - p < 8 || Number.isInteger(x) || x !== x) { v${i} = d.columnFloat(p); p = d.pos; } else { v${i} = x; p += 8; } }\n`;
          rowBody += `else { ${value} }\n`;
        }
        const end = `d.pos = p;\nreturn new R(${[...fields.map((_, i) => `v${i}`), "I"].join(", ")});`;
        body += end;
        rowBody += end;
        made = new Function("S", `function R(${args}) { ${sets} this[S] = I; }
          R.prototype = Object.prototype;
          return {
            make: function (v, I) { return new R(${[...fields.map((_, i) => `v[${i}]`), "I"].join(", ")}); },
            read: function (d, I) {\n${body}\n},
            readRow: function (d, I, K) {\n${rowBody}\n},
          };`)(CLASS) as { make: RecordMaker; read: RecordRead; readRow: RowRecordRead };
      } catch {
        made = null;
      }
    }
    if (recordMakers.size < MAX_RECORD_MAKERS) {
      recordMakers.set(key, made);
      if (made !== null) recordSamples.push(made.make(new Array(fields.length).fill(undefined), shape.info));
    }
  }
  shape.factory = made === null ? null : made.make;
  shape.read = made === null ? null : made.read;
  shape.readRow = made === null ? null : made.readRow;
  return shape.factory;
}

const MAX_RECORD_KEYS = 64;
/** The str keys of a RECORDS checked for duplicates one by one before a Map takes over. */
const RECORDS_SCAN = 16;

type RowRead = (d: BodyDecoder) => object;
/** How many row readers have been made: bounded as recordMakers is. */
let rowReadersMade = 0;

/** The reader of RECORDS rows of the keys of `node`, strs (none "__proto__" or an array
 * index), made as plain objects; null where code generation is refused or too many were made.
 * Like a shape's reader (recordFactory), it reads a row's values unrolled, the commonest kinds
 * inline (VALUE_READS), into one object literal. Kept on the key sequence's trie node. */
function rowReader(node: KeyNode, keys: string[]): RowRead | null {
  if (node.rowRead !== undefined) return node.rowRead;
  let read: RowRead | null = null;
  if (keys.length <= MAX_RECORD_KEYS && rowReadersMade < MAX_RECORD_MAKERS) {
    rowReadersMade++;
    // A value read by the fast path is at the place of its key, as in a dict of these keys,
    // so that the dicts it holds find the readers and hints of that place.
    const nodes = new Array<KeyNode>(node.depth + 1);
    for (let n: KeyNode | null = node; n !== null; n = n.parent) nodes[n.depth] = n;
    try {
      let body = "const b = d.buf, e = d.end, dv = d.dv(); let p = d.pos, t = 0, x = 0, u = 0, w = 0;\n";
      for (let i = 0; i < keys.length; i++) {
        body += `let v${i}; t = p < e ? b[p] : 0xff; if (t < 0x40) { v${i} = t; p++; } ${VALUE_READS(`v${i}`, `d.place = N[${i + 1}];`)} else { d.pos = p; d.place = N[${i + 1}]; v${i} = d.fast(); p = d.pos; }\n`;
      }
      const props = keys.map((k, i) => `${JSON.stringify(k)}: v${i}`).join(", ");
      body += `d.pos = p;\nreturn { ${props} };`;
      read = new Function("N", `return function (d) {\n${body}\n};`)(nodes) as RowRead;
    } catch {
      read = null;
    }
  }
  node.rowRead = read;
  return read;
}

/** The frames of a finished decode, kept by the reused decoder for the next one, holding no
 * value of its own: what they keep is key strs and makers of key sequences (compared by
 * value), which the next decode may reuse. */
function releaseFrames(stack: Frame[]): void {
  for (let i = 0; i < stack.length; i++) {
    const f = stack[i];
    f.container = null;
    f.key = undefined;
    f.values = null;
    f.row = null;
    f.list = null;
    f.recordKeys = null;
    f.rowMaker = null;
    f.columns = null;
    f.shape = null;
    f.event = null;
    f.keys = null;
    f.hashCounts = null;
    f.node = null;
    f.scratch?.fill(undefined);
  }
}

/** How deep the recursive fast path goes before the stack machine takes over: deep enough
 * for real data, shallow enough for any caller's call stack. */
const FAST_DEPTH = 128;

/**
 * Key sequences met so far, as a trie: a dict's str keys are a walk from the root, one node
 * per key. A node knows whether its keys are distinct (a duplicate is an error found once,
 * when the node is made, and not by comparing every key of every dict), whether a plain
 * object keeps them in order (no "__proto__", no array index), and, made at its second use,
 * the function that makes an object of those keys by one literal (one hidden class per
 * sequence). Each node also remembers the children taken last and where their keys were
 * written in this decode's input: a key written in the same bytes (the same short str, or a
 * REF to the same offset) is that child's key, taken without decoding it, and record
 * payloads repeat their key sequences.
 *
 * Shared by all decodes and bounded: only keys' strings are kept, never values, and when
 * MAX_TRIE_NODES nodes have been made the trie starts again from an empty root.
 */
class KeyNode {
  next: Map<string, KeyNode> | null = null;
  /** The two children taken last, each with where its key was written (tag included) in
   * the input of the decode numbered hintDecode: its bytes there, and those of a key read
   * now, are compared. */
  hint: KeyNode | null = null;
  hintPos = 0;
  hintLen = 0;
  hintDecode = 0;
  hint2: KeyNode | null = null;
  hint2Pos = 0;
  hint2Len = 0;
  hint2Decode = 0;
  uses = 0;

  /** Makes `child`, written at pos (len bytes) in decode `decode`, the first hint; the
   * first becomes the second. */
  pushHint(child: KeyNode, pos: number, len: number, decode: number): void {
    this.hint2 = this.hint;
    this.hint2Pos = this.hintPos;
    this.hint2Len = this.hintLen;
    this.hint2Decode = this.hintDecode;
    this.hint = child;
    this.hintPos = pos;
    this.hintLen = len;
    this.hintDecode = decode;
  }

  make: ((v: unknown[]) => object) | null | undefined = undefined;
  /** The reader of RECORDS rows of this key sequence (see rowReader). */
  rowRead: ((d: BodyDecoder) => object) | null | undefined = undefined;
  /** See firstKeyHints. */
  firstKeys: KeyNode | null = null;
  /** The reader of this sequence (see RecordReader): undefined until made, null when it
   * cannot be. */
  reader: RecordReader | null | undefined = undefined;
  /** As a place's hints (the root, or a firstKeys node): the reader that last read a dict
   * there, tried first on the next. */
  lastReader: RecordReader | null = null;
  /** As a place's hints: the keys of the dict read last there, as written in the input of
   * the decode numbered tplDecode (see KeyTemplate), or null. */
  tpl: KeyTemplate | null = null;
  tplDecode = 0;
  /** The readers of this sequence by a template (see templateReader), by the key lengths
   * and charges they were made for; null when code generation was refused. */
  tplReads: Map<string, TemplateRead | null> | null = null;
  /** As a place's hints: the keys of the RECORDS read last there, as written in the input of
   * the decode numbered recDecode (see BodyDecoder.fastRecordsKeys): where, in how many bytes,
   * what they charged, and their trie node (null: none kept) and strs. */
  recPos = 0;
  recLen = 0;
  recDecode = 0;
  recCharge = 0;
  recNode: KeyNode | null = null;
  recKeys: string[] | null = null;
  constructor(
    /** The last key of the sequence ("" at the root). */
    readonly key: string,
    /** The sequence's length. */
    readonly depth: number,
    /** Its keys are distinct. */
    readonly distinct: boolean,
    /** Distinct, none "__proto__" and none an array index: a plain object keeps them in order. */
    readonly plain: boolean,
    readonly parent: KeyNode | null,
  ) {}

  /** The node of this sequence and then `key`, made when new. */
  child(key: string): KeyNode {
    let next = this.next?.get(key);
    if (next === undefined) {
      if (trieNodes >= MAX_TRIE_NODES) {
        // Start again: the nodes in use stay valid (and unreachable once this decode ends).
        keyTrie = new KeyNode("", 0, true, true, null);
        trieNodes = 0;
      }
      let distinct = this.distinct;
      for (let n: KeyNode | null = this; distinct && n !== null && n.parent !== null; n = n.parent) if (n.key === key) distinct = false;
      next = new KeyNode(key, this.depth + 1, distinct, distinct && this.plain && key !== "__proto__" && !isIndexKey(key), this);
      (this.next ??= new Map()).set(key, next);
      trieNodes++;
    }
    return next;
  }

  /** The keys of the sequence, in order. */
  keys(): string[] {
    const keys = new Array<string>(this.depth);
    for (let n: KeyNode = this; n.parent !== null; n = n.parent) keys[n.depth - 1] = n.key;
    return keys;
  }
}
let keyTrie = new KeyNode("", 0, true, true, null);
let trieNodes = 0;
const MAX_TRIE_NODES = 20000;
/** Every decode's number, for the REF hints of the trie (see KeyNode). */
let decodeCount = 0;

/** The hints for the first key of a dict that is the value of `place`'s key (a node used
 * for its hints alone, of the root's children): every dict starts at the root, and the root's
 * two hints cannot follow the nested dicts of a record (a product's price, stock, rating,
 * attributes); the dicts found at one place mostly start alike. */
function firstKeyHints(place: KeyNode): KeyNode {
  return (place.firstKeys ??= new KeyNode("", 0, true, true, null));
}

/** The trie node of a key sequence (the stack machine's dicts: the fast path walks the trie
 * as it reads them). */
function dictRecordNode(keys: string[], n: number): KeyNode {
  let node = keyTrie;
  for (let i = 0; i < n; i++) node = node.child(keys[i]);
  return node;
}

/** The function making an object of the node's keys (plain, so they stay in order) from
 * their values, generated at the second use; null when code generation is refused (a
 * content security policy) or the decode's budget of generated functions is spent. */
function recordMaker(node: KeyNode, d: { makerBudget: number }): ((v: unknown[]) => object) | null {
  if (node.make !== undefined) return node.make;
  if (++node.uses < 2 || d.makerBudget <= 0) return null;
  d.makerBudget--;
  node.make = null;
  try {
    const props = node.keys().map((k, i) => `${JSON.stringify(k)}: v[${i}]`).join(", ");
    node.make = new Function(`return function (v) { return { ${props} }; };`)();
  } catch {
    // code generation refused: key by key
  }
  return node.make!;
}

/**
 * A function reading a dict of one key sequence, each key written as a SHORT_STR or STR (as
 * the JS encoder writes keys), generated from the keys: it compares each key's bytes with the
 * constant bytes of its encoding, charges it, reads its value (the commonest kinds itself,
 * see VALUE_READS, the rest by the fast path) and makes the object by one literal. It has no
 * trie walk, no hint to load, and no value array: at the first key whose bytes differ (or
 * that the input cannot hold), it stores the values read so far in the decoder's
 * missValues, leaves the position at that key, sets missAt and returns MISS, and the trie
 * walk goes on from there. Keys in other forms (REFs, as Python writes repeated keys)
 * always take the trie.
 */
class RecordReader {
  constructor(
    readonly n: number,
    /** nodes[i]: the trie node of the first i keys (nodes[0], the root). */
    readonly nodes: KeyNode[],
    readonly read: (d: BodyDecoder) => unknown,
  ) {}
}
const MISS = Symbol("miss");

/**
 * The keys of a dict as its input wrote them, each in at most 4 bytes: a REF (as Python
 * writes every repeated key) or an untracked SHORT_STR of up to 3 bytes. The next dict at the
 * same place whose key bytes are the same, compared a 32-bit load at a time, has the same keys
 * (a REF to the same offset is the same str), with no trie walk, and no reader can be
 * generated for REF keys: their bytes change from payload to payload. Valid only in the
 * decode that made it.
 */
type TemplateRead = (d: BodyDecoder, tpl: KeyTemplate) => unknown;

/**
 * A function reading a dict of one key sequence by a template of this decode (KeyTemplate):
 * a RecordReader whose key bytes are not constants but the template's words, so that it
 * serves the REF keys of Python's payloads. At the first key that differs it stores the
 * values read so far and where their keys started in the decoder's missValues and missPos,
 * leaves the position there, sets missAt and returns MISS. Generated once per sequence,
 * when it has a record maker.
 */
function templateReader(node: KeyNode, tpl: KeyTemplate, d: { makerBudget: number }): TemplateRead | null {
  // Specialized to the template's key lengths and charges (one payload writes its keys
  // alike: a REF of 2 bytes charges nothing), a few variants per sequence, then one generic.
  let sig = "";
  for (let i = 0; i < tpl.n; i++) sig += `${tpl.lens[i]}${tpl.charges[i] === 0 ? "r" : "s"}`;
  const reads = (node.tplReads ??= new Map());
  let read = reads.get(sig);
  if (read !== undefined) return read;
  const generic = reads.size >= 8;
  if (generic && (read = reads.get("")) !== undefined) return read;
  // Each one generated counts against the decode's budget of generated functions (see
  // recordMaker); past it, the template's loop in fastRecord reads the dict.
  if (d.makerBudget <= 0) return null;
  d.makerBudget--;
  read = null;
  const nodes = new Array<KeyNode>(node.depth + 1);
  for (let n: KeyNode | null = node; n !== null; n = n.parent) nodes[n.depth] = n;
  const keys = node.keys();
  let body = "const b = d.buf, e = d.end, dv = d.dv(), W = T.words, M = T.masks, L = T.lens, C = T.charges; let p = d.pos, t = 0, c = 0, x = 0, u = 0, w = 0;\n";
  for (let i = 0; i < keys.length; i++) {
    const saved = keys.slice(0, i).map((_, j) => `V[${j}] = v${j}; P[${j}] = q${j}; `).join("");
    const missed = `{ const V = d.missValues, P = d.missPos; ${saved}d.pos = p; d.missAt = ${i}; return MISS; }`;
    if (generic) {
      body += `if (e - p < 4 || (dv.getInt32(p, true) & M[${i}]) !== W[${i}]) ${missed}\n`;
      body += `const q${i} = p; c = C[${i}]; if (c !== 0) { ${CHARGE("c", "p")} } p += L[${i}]; let v${i}; t = p < e ? b[p] : 0xff;\n`;
    } else {
      const len = tpl.lens[i];
      const charge = tpl.charges[i] === 0 ? "" : `${CHARGE(tpl.charges[i], "p")} `;
      body += `if (e - p < 4 || (dv.getInt32(p, true) & ${tpl.masks[i]}) !== W[${i}]) ${missed}\n`;
      body += `const q${i} = p; ${charge}p += ${len}; let v${i}; t = p < e ? b[p] : 0xff;\n`;
    }
    // The place (see BodyDecoder.place) matters only to a dict, read by the fast path.
    body += `if (t < 0x40) { v${i} = t; p++; } ${VALUE_READS(`v${i}`, `d.place = N[${i + 1}];`)} else { d.pos = p; d.place = N[${i + 1}]; v${i} = d.fast(); p = d.pos; }\n`;
  }
  body += `d.pos = p;\nreturn { ${keys.map((k, i) => `${JSON.stringify(k)}: v${i}`).join(", ")} };`;
  try {
    read = new Function("N", "MISS", `return function (d, T) {\n${body}\n};`)(nodes, MISS) as TemplateRead;
  } catch {
    // code generation refused (a content security policy): fastRecord's loop reads it
  }
  reads.set(generic ? "" : sig, read);
  return read;
}

class KeyTemplate {
  /** Each key's bytes, little-endian, and the mask of its length. */
  readonly words: Int32Array;
  readonly masks: Int32Array;
  /** Each key's length, and its charge (a SHORT_STR's; nothing for a REF). */
  readonly lens: Uint8Array;
  readonly charges: Int32Array;
  /** nodes[i]: the trie node of the first i keys. */
  readonly nodes: KeyNode[];
  /** The reader of the keys' sequence, or null (see templateReader). */
  read: TemplateRead | null = null;
  constructor(readonly n: number) {
    this.words = new Int32Array(n);
    this.masks = new Int32Array(n);
    this.lens = new Uint8Array(n);
    this.charges = new Int32Array(n);
    this.nodes = new Array<KeyNode>(n + 1);
  }
}

/** The head of a str of n UTF-8 bytes as the JS encoder writes it: a SHORT_STR up to 23
 * bytes, else a STR and its length's varint. */
function strHead(n: number): number[] {
  if (n < 24) return [0x40 + n];
  const head = [0x68];
  for (; n >= 0x80; n = Math.floor(n / 0x80)) head.push((n % 0x80) | 0x80);
  head.push(n);
  return head;
}

/** Generated code: whether the input at p holds `bytes` (the caller checked that it holds
 * as many): 32 bits at a time from 4 bytes on, the last load overlapping, so that a long
 * key is a few compares and a reader stays small. */
function sameBytesAt(bytes: number[]): string {
  if (bytes.length < 4) return bytes.map((x, j) => `b[p + ${j}] === ${x}`).join(" && ");
  const word = (j: number) => (bytes[j] | (bytes[j + 1] << 8) | (bytes[j + 2] << 16) | (bytes[j + 3] << 24)) | 0;
  const tests: string[] = [];
  for (let j = 0; j + 4 < bytes.length; j += 4) tests.push(`dv.getInt32(p + ${j}, true) === ${word(j)}`);
  tests.push(`dv.getInt32(p + ${bytes.length - 4}, true) === ${word(bytes.length - 4)}`);
  return tests.join(" && ");
}

/** The reader of a node's key sequence (see RecordReader), made with its record maker;
 * null when one of its keys holds a lone surrogate or code generation is refused. */
function recordReader(node: KeyNode): RecordReader | null {
  if (node.reader !== undefined) return node.reader;
  node.reader = null;
  const nodes = new Array<KeyNode>(node.depth + 1);
  for (let n: KeyNode | null = node; n !== null; n = n.parent) nodes[n.depth] = n;
  const keys = node.keys();
  let body = "const b = d.buf, e = d.end, dv = d.dv(); let p = d.pos, t = 0, x = 0, u = 0, w = 0;\n";
  for (let i = 0; i < keys.length; i++) {
    if (hasLoneSurrogate(keys[i])) return null;
    const utf8 = encodeUtf8(keys[i]);
    const bytes = [...strHead(utf8.length), ...utf8];
    const same = sameBytesAt(bytes);
    const saved = keys.slice(0, i).map((_, j) => `V[${j}] = v${j}; `).join("");
    body += `if (e - p < ${bytes.length} || !(${same})) { const V = d.missValues; ${saved}d.pos = p; d.missAt = ${i}; return MISS; }\n`;
    // The value: the commonest kinds here (VALUE_READS), anything else by the fast path.
    body += `${CHARGE(cost.str(utf8.length), "p")} p += ${bytes.length}; let v${i}; t = p < e ? b[p] : 0xff;\n`;
    body += `if (t < 0x40) { v${i} = t; p++; } ${VALUE_READS(`v${i}`, `d.place = N[${i + 1}];`)} else { d.pos = p; d.place = N[${i + 1}]; v${i} = d.fast(); p = d.pos; }\n`;
  }
  body += `d.pos = p;\nreturn { ${keys.map((k, i) => `${JSON.stringify(k)}: v${i}`).join(", ")} };`;
  try {
    const read = new Function("N", "MISS", `return function (d) {\n${body}\n};`)(nodes, MISS);
    node.reader = new RecordReader(keys.length, nodes, read);
  } catch {
    // code generation refused (a content security policy): the trie walk reads it
  }
  return node.reader;
}

const HASH_LIMIT = 64;

/** The REF table before the first tracked value: one empty slot, never written (the first
 * record grows the table). */
const NO_REFS = new Int32Array(2);
/** One varint reader for all decoders: each read is consumed before anything else runs. */
const varintReader = new VarintReader();

/** The home slot of a body offset in the REF table (a multiplicative hash, its high bits
 * folded down so that offsets of a common stride spread). */
function refHash(off: number, mask: number): number {
  const h = Math.imul(off, 0x9e3779b1);
  return (h ^ (h >>> 15)) & mask;
}

function insertRef(table: Int32Array, mask: number, off: number, index: number): void {
  let i = refHash(off, mask);
  while (table[2 * i] !== 0) i = (i + 1) & mask;
  table[2 * i] = off + 1;
  table[2 * i + 1] = index;
}
/** V8's ComputeUnseededHash, which its Maps and Sets use for int32 keys. */
function v8SmiHash(key: number): number {
  let hash = key >>> 0;
  hash = (~hash + (hash << 15)) >>> 0;
  hash = (hash ^ (hash >>> 12)) >>> 0;
  hash = (hash + (hash << 2)) >>> 0;
  hash = (hash ^ (hash >>> 4)) >>> 0;
  hash = Math.imul(hash, 2057) >>> 0;
  hash = (hash ^ (hash >>> 16)) >>> 0;
  return hash & 0x3fffffff;
}

/** V8's ComputeLongHash of the 64-bit value lo + 2^32 hi, in 32-bit halves (no BigInt). */
function v8LongHash(lo: number, hi: number): number {
  // hash = ~hash + (hash << 18)
  let t = (~lo >>> 0) + ((lo << 18) >>> 0);
  hi = ((~hi >>> 0) + (((hi << 18) | (lo >>> 14)) >>> 0) + (t > 0xffffffff ? 1 : 0)) >>> 0;
  lo = t >>> 0;
  // hash = hash ^ (hash >> 31)
  lo = (lo ^ ((lo >>> 31) | (hi << 1))) >>> 0;
  hi = (hi ^ (hi >>> 31)) >>> 0;
  // hash = hash * 21, as hash + (hash << 2) + (hash << 4)
  t = lo + ((lo << 2) >>> 0);
  let h = (hi + (((hi << 2) | (lo >>> 30)) >>> 0) + (t > 0xffffffff ? 1 : 0)) >>> 0;
  const l = t >>> 0;
  t = l + ((lo << 4) >>> 0);
  hi = (h + (((hi << 4) | (lo >>> 28)) >>> 0) + (t > 0xffffffff ? 1 : 0)) >>> 0;
  lo = t >>> 0;
  // hash = hash ^ (hash >> 11)
  lo = (lo ^ ((lo >>> 11) | (hi << 21))) >>> 0;
  hi = (hi ^ (hi >>> 11)) >>> 0;
  // hash = hash + (hash << 6)
  t = lo + ((lo << 6) >>> 0);
  h = (hi + (((hi << 6) | (lo >>> 26)) >>> 0) + (t > 0xffffffff ? 1 : 0)) >>> 0;
  lo = t >>> 0;
  hi = h;
  // hash = hash ^ (hash >> 22), of which the low 30 bits are kept
  return ((lo ^ ((lo >>> 22) | (hi << 10))) >>> 0) & 0x3fffffff;
}

const hashScratch = new DataView(new ArrayBuffer(8));

/** The hash V8 gives a number or bigint key of a Map or Set (Object::GetSimpleHash), none of
 * them seeded: an int32 value (a Smi, or a heap number holding one) by ComputeUnseededHash;
 * any other number by ComputeLongHash of its IEEE bits; a bigint by ComputeLongHash of the
 * lowest 64 bits of its magnitude (so 2^64, 2 x 2^64, ... all hash alike). */
function v8KeyHash(k: number | bigint): number {
  if (typeof k === "number") {
    if ((k | 0) === k) return v8SmiHash(k);
    hashScratch.setFloat64(0, k, true);
  } else {
    if (k === 0n) return 0;
    hashScratch.setBigUint64(0, k < 0n ? -k : k, true);
  }
  return v8LongHash(hashScratch.getUint32(0, true), hashScratch.getUint32(4, true));
}

/** What a traced value is (amber inspect's kinds). */
export type TraceInfo =
  | ["scalar"]
  | ["data", number]
  | ["container", number]
  | ["packed", number]
  | ["tuple_list", number, number]
  | ["records", number, number]
  /** rows, shape number, whether the shape is defined here, the class, the float columns'
   * field indexes. */
  | ["object_rows", number, number, boolean, [string, string, ObjectKind, readonly string[] | null], number[]]
  /** A float column's value (spec 5.17.9): 8 bytes without a tag; the field's name. */
  | ["column", string]
  | ["ext", string, number | null]
  | ["object", number, boolean, [string, string, ObjectKind, readonly string[] | null]]
  | ["ref", number, number]
  | ["supersede"];

/** One value as the decoder met it; offsets are absolute (body offsets in a decompressed
 * body). `end` and `value` stay null/undefined for a value the decode failed inside. */
export interface TraceEvent {
  offset: number;
  end: number | null;
  depth: number;
  tag: number;
  name: string;
  headEnd: number | null;
  tracked: number | null;
  info: TraceInfo | null;
  value: unknown;
}

export const TAG_NAMES: Record<number, string> = {
  0x68: "STR", 0x69: "STR_SURROGATES", 0x6a: "BYTES", 0x6b: "BYTEARRAY", 0x6c: "INT", 0x6d: "BIGINT",
  0x6e: "FLOAT64", 0x6f: "FLOAT32", 0x70: "COMPLEX", 0x71: "LIST", 0x72: "TUPLE", 0x73: "DICT", 0x74: "SET",
  0x75: "FROZENSET", 0x76: "EXT", 0x77: "OBJECT", 0x78: "PACKED_INT_LIST", 0x79: "PACKED_FLOAT_LIST",
  0x7b: "RECORDS", 0x7c: "TUPLE_LIST", 0x7d: "OBJECT_ROWS", 0x90: "NONE", 0x91: "FALSE", 0x92: "TRUE", 0x93: "REF", 0x94: "SUPERSEDE",
};

export function tagName(tag: number): string {
  if (tag < 0x40) return "SMALL_INT";
  if (tag >= 0x80 && tag < 0x90) return "SMALL_NEG";
  const code = tag & 0x40 ? tag & 0x7f : tag;
  if (code >= 0x40 && code < 0x58) return "SHORT_STR";
  if (code >= 0x58 && code < 0x5c) return "SHORT_LIST";
  if (code >= 0x5c && code < 0x60) return "SHORT_TUPLE";
  if (code >= 0x60 && code < 0x68) return "SHORT_DICT";
  return TAG_NAMES[code] ?? "RESERVED";
}

const PENDING = Symbol("pending");

// Arrays made for n items, with generic elements from the start: filled by index, they never
// change their elements kind (a float then a str in one tuple would otherwise convert it).
function newArray(n: number): unknown[] {
  const a = new Array(n);
  a[0] = undefined;
  return a;
}
function newTuple(n: number): Tuple {
  const t = new Tuple(n);
  if (n > 0) t[0] = undefined;
  return t;
}

/**
 * Short ASCII strs met before, by their bytes: JSON-like payloads repeat their short values
 * (currencies, states, tags, types: 92% of product_catalog's strs of up to 12 bytes are
 * repeats), and a hit returns the str made before instead of making one (a substring of
 * the window copies strs that short, and each is garbage for the collector). Each slot holds
 * a str's bytes as three little-endian words, zero past its length, and the length; a hit
 * compares all four, so it is the same str. Direct-mapped: a collision replaces the slot, so
 * the table never grows and crafted input can only make misses. Shared by all decodes; what
 * it keeps is at most STR_CACHE_SLOTS flat strs of up to 12 characters (made by asciiString,
 * never cut from a window, which a str kept here would keep alive).
 */
const STR_CACHE_SLOTS = 4096;
const STR_CACHE_MAX = 12;
const strCacheWords = new Int32Array(4 * STR_CACHE_SLOTS);
const strCacheTexts: string[] = new Array<string>(STR_CACHE_SLOTS).fill("");
/** The low n bytes of a word (n from 1 to 4). */
const LOW_BYTES = new Int32Array([0, 0xff, 0xffff, 0xffffff, -1]);
/** Misses a decode takes before its hits must keep up: payloads of distinct short strs (ids,
 * names) stop looking after a few hundred, and then pay one comparison per str. */
const STR_CACHE_TRIAL = 256;

/** From this length a STR is decoded natively, never cut from a window (AsciiWindow makes
 * strs this long on their own too). */
const LONG_STR = 256;

// Shared by all decodes: only valid strings enter it, and each hit compares every byte.
const KEY_CACHE_SIZE = 4096;
const keyCache: ({ bytes: Uint8Array; text: string } | undefined)[] = new Array(KEY_CACHE_SIZE);

/** Whether the bytes [start, end) of the view, at least 4, are all ASCII: 32 bits at a time
 * (unaligned little-endian loads, the last one overlapping). A function of its own, given
 * the view, rather than the loop written in BodyDecoder.isAsciiSpan: V8 compiled it to
 * about 70 fewer instructions per str where it inlined it (valgrind: 12% of the str reads
 * of a list of 36 to 100-byte strs). */
function asciiWords(dv: DataView, start: number, end: number): boolean {
  const last = end - 4;
  let or = dv.getInt32(last, true);
  let i = start;
  for (; i + 8 <= last; i += 8) or |= dv.getInt32(i, true) | dv.getInt32(i + 4, true);
  if (i < last) or |= dv.getInt32(i, true);
  return (or & 0x80808080) === 0;
}

export class BodyDecoder {
  // Every field is set by init(), which a reused decoder runs again for each decode.
  private buf!: Uint8Array;
  private view: DataView | null = null;
  private pos!: number;
  private end!: number;
  /** absolute offset = buffer index - delta */
  private delta!: number;
  /** body offset = buffer index - bodyStart */
  private bodyStart!: number;
  private maxDepth!: number;
  private options!: ValueOptions;
  private objectDicts!: boolean;
  /** Placeholders as plain records (option placeholders: "plain"). */
  private plainRecords!: boolean;
  private depth = 0;
  private spent!: number;
  private maxAlloc!: number;
  /** The recorded objects, in refValues, found by body offset through refTable: an open
   * addressing table of pairs (offset + 1, 1 + index in refValues), at most half full. A REF
   * is then a multiply and a load or two, with no Map and no boxing; a table indexed by offset
   * itself would cost 4 bytes per body byte, allocated and zeroed on every decode. */
  private refTable = NO_REFS;
  private refMask = 0;
  private refValues: unknown[] = [];
  /** This decode's number (see KeyNode's hints). */
  private decodeId = 0;
  /** Where the value being read sits: the trie node of the key it is the value of, in the
   * dict read last by the fast path (null at the top). A dict there finds its first key
   * through that node's firstKeyHints. */
  private place: KeyNode | null = null;
  /** Where a RecordReader that returned MISS stopped (the index of the key). */
  missAt = 0;
  /** What a template's reader read before it missed (see templateReader). */
  readonly missValues: unknown[] = newArray(MAX_RECORD_KEYS);
  readonly missPos = new Int32Array(MAX_RECORD_KEYS);
  /** A dict key that is not a str, read by trieKey. */
  private otherKey: unknown = undefined;
  /** fastRecord's value arrays, one per depth, and the deepest used in this decode. */
  private recordValues: unknown[][] = [];
  /** fastRecord's key offsets, one array per depth (see keepTemplate). */
  private recordKeyPos: Int32Array[] = [];
  private recordDepth = 0;
  /** How many more record makers this decode may generate (see recordMaker). */
  makerBudget = 0;
  /** Long ASCII strs are cut from windows of the input (see AsciiWindow). */
  private window = new AsciiWindow();
  /** This decode's hits and misses of the short str cache (see strCacheWords). */
  private strHits = 0;
  private strMisses = 0;
  private incomplete: Set<number> | null = null;
  /** The open containers; a reused decoder keeps its frames (and their scratch arrays). */
  private stack: Frame[] = [];
  private sp = 0;
  private vr = varintReader;
  private shapes: Shape[] = [];
  private usedBuffers: Set<string> | null = null;
  private hashWork = 0;
  private hashBudget!: number;
  private fingerprints: Map<object, string> | null = null;
  /** When set, every value met is recorded here (amber inspect). */
  tracer: TraceEvent[] | null = null;
  private trackedIndex: Map<number, number> | null = null;
  /** Where the head of the value just read ends (its data follows), or -1. */
  private headPos = -1;
  private lastRef = 0;
  /** For tracing: the shape number of the last OBJECT, and whether it defined the shape. */
  private lastShapeNumber = 0;
  private lastShapeDefined = false;
  /** For tracing: the shape and float columns of the last OBJECT_ROWS. */
  private lastRowsShape: Shape | null = null;
  private lastColumns: number[] = [];

  constructor(
    buf: Uint8Array, start: number, end: number, errorBase: number,
    options: ValueOptions, spent: number, maxAlloc: number, hashBudget: number,
  ) {
    this.init(buf, start, end, errorBase, options, spent, maxAlloc, hashBudget);
  }

  /** Sets every field for a decode of buf[start, end) (all but the frames, which only hold
   * what releaseFrames left). */
  init(buf: Uint8Array, start: number, end: number, errorBase: number, options: ValueOptions, spent: number, maxAlloc: number, hashBudget: number): void {
    this.buf = buf;
    this.view = null;
    this.pos = start;
    this.end = end;
    this.bodyStart = start;
    this.delta = start - errorBase;
    this.options = options;
    this.maxDepth = options.maxDepth ?? DEFAULT_MAX_DEPTH;
    this.objectDicts = options.dicts === "object";
    this.plainRecords = options.placeholders === "plain";
    this.depth = 0;
    this.spent = spent;
    this.maxAlloc = maxAlloc;
    this.refTable = NO_REFS;
    this.refMask = 0;
    this.refValues = [];
    this.decodeId = ++decodeCount;
    this.strHits = 0;
    this.strMisses = 0;
    this.otherKey = undefined;
    this.place = null;
    this.makerBudget = 16 + ((end - start) >> 10);
    this.incomplete = null;
    this.sp = 0;
    this.shapes = [];
    this.usedBuffers = null;
    this.hashWork = 0;
    this.hashBudget = hashBudget;
    this.fingerprints = null;
    this.tracer = null;
    this.trackedIndex = null;
    this.headPos = -1;
    this.lastRef = 0;
    this.lastShapeNumber = 0;
    this.lastShapeDefined = false;
    this.lastRowsShape = null;
    this.lastColumns = [];
  }

  /** After a decode: the frames and fields let go of its input and values. */
  release(): void {
    releaseFrames(this.stack);
    this.window.reset();
    const pool = this.recordValues;
    for (let d = Math.min(this.recordDepth, pool.length - 1); d >= 0; d--) pool[d]?.fill(undefined);
    this.recordDepth = 0;
    this.init(NO_INPUT, 0, 0, 0, NO_OPTIONS, 0, 0, 0);
  }

  /** A view of the input for floats, made at the first (small payloads often have none). */
  private dv(): DataView {
    return (this.view ??= new DataView(this.buf.buffer, this.buf.byteOffset, this.buf.byteLength));
  }

  private err(kind: Parameters<typeof decodeError>[0], index: number, message?: string): DecodeError {
    return decodeError(kind, index - this.delta, message);
  }

  private charge(bytes: number, index: number): void {
    this.spent += bytes;
    if (this.spent > this.maxAlloc) this.overBudget(index);
  }

  /** The error of a charge at `index` that went past max_alloc (see charge). */
  private overBudget(index: number): never {
    throw this.err("alloc_limit", index, `decoding would allocate more than max_alloc=${this.maxAlloc} bytes`);
  }

  private enter(index: number, levels = 1): void {
    this.depth += levels;
    if (this.depth > this.maxDepth) {
      throw this.err("depth_limit", index, `nesting deeper than max_depth=${this.maxDepth}`);
    }
  }

  /** A zigzag varint (INT, packed ints): the signed value, with no bigint for safe ones. */
  private signedVarint(): number | bigint {
    const vr = this.vr;
    if (!vr.read(this.buf, this.pos, this.end)) vr.throwAt(this.pos - this.delta);
    this.pos = vr.end;
    return vr.signed;
  }

  private varint(): number | bigint {
    const vr = this.vr;
    if (!vr.read(this.buf, this.pos, this.end)) vr.throwAt(this.pos - this.delta);
    this.pos = vr.end;
    return vr.exact;
  }

  private pushFrame(type: F, at: number): Frame {
    let f = this.stack[this.sp];
    if (f === undefined) {
      f = new Frame();
      this.stack[this.sp] = f;
    }
    this.sp++;
    f.type = type;
    f.at = at;
    f.trackOff = -1;
    f.keys = null;
    f.hashedKeys = 0;
    f.hashCounts = null;
    f.values = null;
    f.shape = null;
    f.row = null;
    return f;
  }

  private record(bodyOff: number, value: unknown): void {
    const index = this.refValues.push(value);
    if (index > this.refMask >> 1) this.growRefs();
    insertRef(this.refTable, this.refMask, bodyOff, index);
  }

  private growRefs(): void {
    const old = this.refTable;
    const mask = Math.max(31, this.refMask * 2 + 1);
    const table = new Int32Array(2 * (mask + 1));
    for (let i = 0; i < old.length; i += 2) if (old[i] !== 0) insertRef(table, mask, old[i] - 1, old[i + 1]);
    this.refTable = table;
    this.refMask = mask;
  }

  /** Decodes the whole body: one root value, then the end. */
  decode(): unknown {
    if (this.pos >= this.end) throw this.err("truncated", this.end);
    // Tracing records every value as the stack machine meets it: no fast path then.
    const value = this.tracer === null ? this.fast() : this.run(0);
    if (this.pos !== this.end) throw this.err("trailing_bytes", this.pos);
    return value;
  }

  /** The stack machine: runs until the frame at index `base` (and all above it) completes,
   * and returns its value (base 0: the root value). */
  private run(base: number): unknown {
    const stack = this.stack;
    const buf = this.buf;
    let column = false;
    for (;;) {
      if (this.sp > base) {
        const top = stack[this.sp - 1];
        if (top.type === F.Dict || top.type === F.ObjectDict || top.type === F.DictRecord) {
          if (top.expectKey) {
            top.childAt = this.pos;
            // The common key: an untracked SHORT_STR, read through the key cache.
            const tag = buf[this.pos];
            if (tag >= 0x40 && tag < 0x58 && this.tracer === null) {
              const n = tag - 0x40;
              const start = this.pos + 1;
              if (n <= this.end - start) {
                this.charge(cost.str(n), this.pos);
                const key = this.cachedStr(start, n);
                this.pos = start + n;
                this.acceptStrKey(top, key);
                continue;
              }
            } else if (tag === 0x93 && this.tracer === null) {
              // A key written once and then referred to (Python shares its key strs).
              const at = this.pos;
              this.pos = at + 1;
              const key = this.reference(at);
              if (typeof key !== "string") {
                this.deliver(top, key);
                continue;
              }
              this.acceptStrKey(top, key);
              continue;
            }
          }
        } else if (top.type === F.Set || top.type === F.FrozenSet || top.type >= F.ObjectFirst || top.type === F.Records) {
          // Objects: where each value starts, for the value rules (spec 5.17.3).
          top.childAt = this.pos;
        } else if (top.type === F.ObjectRows && top.columns !== null && top.columns[top.rowIndex] !== 0) {
          // A float column's value has no tag: its 8 bytes are read here.
          column = true;
        }
      }
      let value = column ? this.columnValue(stack[this.sp - 1]) : this.value();
      column = false;
      for (;;) {
        if (value === PENDING) {
          const top = stack[this.sp - 1];
          if (top.remaining > 0) break;
          value = this.finish(top);
          continue;
        }
        if (this.sp === base) return value;
        const top = stack[this.sp - 1];
        if (!this.deliver(top, value)) break;
        value = this.finish(top);
      }
    }
  }

  /**
   * The fast path: recursive descent over the common values. V8 optimizes it far better than
   * the stack machine: no frame dispatch per value, each child stored straight into its
   * container. Containers are opened by the code the machine uses (so every check, charge and
   * offset is the same) and filled here while their frame is of a simple kind; any other
   * frame, a dict that changes kind midway (a key a plain object cannot take), and anything
   * FAST_DEPTH levels deep is handed to the machine, so the JS call stack stays bounded
   * whatever max_depth allows.
   */
  private fast(): unknown {
    // Small enough for V8 to inline into the loops that call it: the commonest tags here,
    // the rest (and the depth limit of the fast path, which only containers reach) below.
    const at = this.pos;
    if (at >= this.end) throw this.err("truncated", this.end);
    const tag = this.buf[at];
    if (tag < 0x40) {
      this.pos = at + 1;
      return tag;
    }
    if (tag < 0x58) return this.shortStr(tag - 0x40, at);
    if (tag === 0x93) {
      this.pos = at + 1;
      return this.reference(at);
    }
    return this.fastTag(tag, at);
  }

  /** A SHORT_LIST of n items at `at`, read here with no frame (the checks and charge of
   * openList); the caller checked FAST_DEPTH. */
  private shortList(n: number, at: number): unknown[] {
    this.pos = at + 1;
    this.enter(at);
    if (n > this.end - this.pos) throw this.err("length_too_large", at, `list declares ${n} items but only ${this.end - this.pos} bytes are left`);
    return this.fastList(n, at);
  }

  /** An untracked list of n items (depth entered, n checked against the input). */
  private fastList(n: number, at: number): unknown[] {
    this.charge(cost.list(n), at);
    if (n === 0) {
      this.depth--;
      return [];
    }
    const list = newArray(n);
    for (let i = 0; i < n; i++) list[i] = this.fast();
    this.depth--;
    return list;
  }

  /** A SHORT_STR of n bytes at `at` (not traced: the fast path's). */
  private shortStr(n: number, at: number): string {
    const start = at + 1, end = start + n;
    if (end > this.end) throw this.err("truncated", at);
    this.charge(cost.str(n), at);
    this.pos = end;
    // Through the cache while it hits (its three words need 12 bytes of input at start).
    // Written out here, not called: shortStr is not inlined into the generated readers
    // that call it, and a second call per str was 3% of product_catalog's instructions.
    if (n <= STR_CACHE_MAX && n !== 0 && this.strMisses <= STR_CACHE_TRIAL + this.strHits && this.end - start >= 12) {
      const dv = this.dv();
      let w0 = dv.getInt32(start, true), w1 = 0, w2 = 0;
      if (n <= 4) w0 &= LOW_BYTES[n];
      else if (n <= 8) w1 = dv.getInt32(start + 4, true) & LOW_BYTES[n - 4];
      else {
        w1 = dv.getInt32(start + 4, true);
        w2 = dv.getInt32(start + 8, true) & LOW_BYTES[n - 8];
      }
      if (((w0 | w1 | w2) & 0x80808080) === 0) {
        const h = (Math.imul(w0 ^ n, 0x9e3779b1) + Math.imul(w1, 0x85ebca6b) + Math.imul(w2, 0xc2b2ae35)) | 0;
        const slot = (h ^ (h >>> 16)) & (STR_CACHE_SLOTS - 1);
        const k = slot << 2;
        const words = strCacheWords;
        if (words[k] === w0 && words[k + 1] === w1 && words[k + 2] === w2 && words[k + 3] === n) {
          this.strHits++;
          return strCacheTexts[slot];
        }
        this.strMisses++;
        const text = asciiString(this.buf, start, n)!;
        words[k] = w0;
        words[k + 1] = w1;
        words[k + 2] = w2;
        words[k + 3] = n;
        strCacheTexts[slot] = text;
        return text;
      }
      // Not all ASCII: not cached, and counted as a miss (payloads of non-ASCII strs stop
      // looking too).
      this.strMisses++;
    }
    const buf = this.buf;
    if (this.isAsciiSpan(start, end)) return this.window.enabled ? this.window.slice(buf, start, end, this.end) : asciiString(buf, start, n)!;
    const s = decodeUtf8(buf, start, end);
    if (s === null) throw this.err("invalid_utf8", start);
    return s;
  }

  /** Whether the bytes [start, end) of the input are all ASCII: from 4 bytes on, 32 bits at
   * a time (unaligned little-endian loads, the last one overlapping), a third of a byte
   * loop's time on a 10-byte str, and no typed array of the input to make or check. */
  private isAsciiSpan(start: number, end: number): boolean {
    if (end - start < 4) {
      const buf = this.buf;
      let or = 0;
      for (let i = start; i < end; i++) or |= buf[i];
      return or < 0x80;
    }
    return asciiWords(this.dv(), start, end);
  }

  /** An INT at `at`: up to 4 varint bytes inline (every int below 2^27 in magnitude); longer
   * ones, and any fault, by the varint reader. Small, so that V8 inlines it into fastTag;
   * the generated readers call it for the INTs they do not read themselves. */
  private int(at: number): number | bigint {
    this.pos = at + 1;
    this.charge(cost.SCALAR, at);
    const buf = this.buf, end = this.end;
    let p = at + 1, z = 0;
    for (let shift = 0; shift < 28 && p < end; shift += 7) {
      const b = buf[p++];
      z |= (b & 0x7f) << shift;
      if (b < 0x80) {
        if (b === 0 && shift > 0) break;
        this.pos = p;
        return (z >>> 1) ^ -(z & 1);
      }
    }
    return this.signedVarint();
  }

  /** A FLOAT32 at `at`: a number, or a Float when it is integral or NaN. */
  private float32(at: number): unknown {
    if (this.end - at - 1 < 4) throw this.err("truncated", at + 1);
    this.charge(cost.SCALAR, at);
    const x = this.dv().getFloat32(at + 1, true);
    this.pos = at + 5;
    return Number.isInteger(x) || x !== x ? new Float(x) : x;
  }

  /** The rest of fast(): a value of any other tag. */
  private fastTag(tag: number, at: number): unknown {
    if (this.depth >= FAST_DEPTH) return this.machineValue();
    let v: unknown;
    switch (tag) {
      case 0x68: {
        // STR of a one- or two-byte length (every str up to 16 KiB); else, and for an
        // overlong length, the general reader.
        const buf = this.buf, p = at + 1;
        const b0 = p < this.end ? buf[p] : 0x80;
        if (b0 < 0x80) return this.str(b0, at, p + 1, false);
        if (p + 1 < this.end && buf[p + 1] < 0x80 && buf[p + 1] !== 0) return this.str((b0 & 0x7f) | (buf[p + 1] << 7), at, p + 2, false);
        v = this.untracedValue();
        break;
      }
      case 0x77: {
        // An untracked OBJECT of a shape defined before (numbered below 128) whose instances
        // are placeholders or plain records: read here with no frame.
        const s = at + 1 < this.end ? this.buf[at + 1] : 0;
        if (s !== 0 && s < 0x80 && s <= this.shapes.length) {
          const shape = this.shapes[s - 1];
          if (shape.placeholderAttrs) return this.fastObject(shape, at);
        }
        v = this.untracedValue();
        break;
      }
      case 0x6c:
        return this.int(at);
      case 0x6e: {
        if (this.end - at - 1 < 8) throw this.err("truncated", at + 1);
        this.charge(cost.SCALAR, at);
        const x = this.dv().getFloat64(at + 1, true);
        this.pos = at + 9;
        return Number.isInteger(x) ? new Float(x) : x !== x ? new Float(x, this.buf.slice(at + 1, at + 9)) : x;
      }
      case 0x6f:
        // FLOAT32: what the JS encoder writes for a float that 32 bits hold exactly (prices
        // of quarter cents, ratings of halves), read here rather than by the machine's reader.
        return this.float32(at);
      case 0x60: case 0x61: case 0x62: case 0x63: case 0x64: case 0x65: case 0x66: case 0x67:
        this.pos = at + 1;
        if (this.objectDicts && tag > 0x60) return this.fastRecord(tag - 0x60, at, false);
        v = this.openDict(tag - 0x60, at, -1);
        break;
      case 0x73:
        if (this.objectDicts) {
          this.pos = at + 1;
          this.enter(at);
          const n = this.containerCount(at, 2);
          if (n > 0 && n <= MAX_RECORD_KEYS) return this.fastRecord(n, at, true);
          v = this.openDict(n, at, -1, true);
          break;
        }
        v = this.untracedValue();
        break;
      case 0x58: case 0x59: case 0x5a: case 0x5b:
        return this.shortList(tag - 0x58, at);
      case 0x71:
        this.pos = at + 1;
        this.enter(at);
        return this.fastList(this.containerCount(at, 1), at);
      case 0x90:
        this.pos = at + 1;
        return null;
      case 0x91:
        this.pos = at + 1;
        return false;
      case 0x92:
        this.pos = at + 1;
        return true;
      default:
        if (tag >= 0x80 && tag < 0x90) {
          this.pos = at + 1;
          return tag - 0x90;
        }
        if (tag >= 0xc0 && tag < 0xd8) {
          // A tracked SHORT_STR (Python marks the strs it shares, dict keys above all).
          this.charge(cost.SCALAR, at);
          const s = this.str(tag - 0xc0, at, at + 1, false);
          this.record(at - this.bodyStart, s);
          return s;
        }
        v = this.untracedValue();
    }
    if (v !== PENDING) return v;
    const f = this.stack[this.sp - 1];
    switch (f.type) {
      case F.List:
      case F.Tuple: {
        const c = f.container, n = f.count;
        for (let i = 0; i < n; i++) c[i] = this.fast();
        return this.finishFrame(f);
      }
      case F.RecordValues: {
        const values = f.values!, n = f.count;
        for (let i = 0; i < n; i++) values[i] = this.fast();
        return this.finishFrame(f);
      }
      case F.TupleList: {
        const list = f.container, arity = f.arity, rows = f.remaining;
        for (let r = 0; r < rows; r++) {
          const row = r === 0 ? f.row! : newTuple(arity);
          for (let j = 0; j < arity; j++) row[j] = this.fast();
          list.push(row);
        }
        f.row = null;
        return this.finishFrame(f);
      }
      case F.Records: {
        const width = f.arity;
        const node = this.fastRecordsKeys(f);
        const keys = f.recordKeys!;
        const list = f.list!, rows = f.count, values = f.values!;
        // Object rows by the generated reader of their keys, where there is one.
        const read = f.rowsAsObjects && rows > 1 ? rowReader(node ?? dictRecordNode(keys as string[], width), keys as string[]) : null;
        if (read !== null) {
          const place = this.place;
          for (let r = 0; r < rows; r++) list[r] = read(this);
          this.place = place;
        } else {
          for (let r = 0; r < rows; r++) {
            for (let j = 0; j < width; j++) values[j] = this.fast();
            list[r] = this.recordsRow(f, keys, values);
          }
        }
        f.remaining = 0;
        return this.finishFrame(f);
      }
      case F.ObjectRows: return this.fastRows(f);
      case F.Set:
      case F.FrozenSet: {
        const set = f.container, n = f.count;
        for (let i = 0; i < n; i++) {
          f.childAt = this.pos;
          const item = this.fast();
          this.checkKey(f, item, "duplicate_element");
          set.add(item);
        }
        return this.finishFrame(f);
      }
      case F.PlainRecord: {
        const fields = f.shape!.fields!, obj = f.container, n = f.count;
        for (let i = 0; i < n; i++) {
          const item = this.fast();
          const name = fields[i];
          if (name === "__proto__") Object.defineProperty(obj, name, { value: item, enumerable: true, writable: true, configurable: true });
          else obj[name] = item;
        }
        return this.finishFrame(f);
      }
      case F.ObjectFirst:
      case F.ObjectAfter: {
        // The kinds without value rules (code 0): their values need no check as they come.
        if (f.code !== 0) return this.resume(f);
        const values = f.values!, n = f.count;
        for (let i = 0; i < n; i++) values[i] = this.fast();
        return this.finishFrame(f);
      }
      case F.ObjectDict: return this.fastObjectDict(f);
      case F.Dict: return this.fastMap(f);
      default: return this.resume(f);
    }
  }

  /** One value by the machine (past FAST_DEPTH). */
  private machineValue(): unknown {
    const v = this.value();
    return v === PENDING ? this.resume(this.stack[this.sp - 1]) : v;
  }

  /** Lets the machine finish the top frame `f` (its `remaining` and key state up to date). */
  private resume(f: Frame): unknown {
    if (f.remaining === 0) return this.finish(f);
    return this.run(this.sp - 1);
  }

  /** A dict key: an untracked SHORT_STR through the key cache, else any value. */
  private fastKey(): unknown {
    const at = this.pos;
    const tag = this.buf[at];
    if (tag >= 0x40 && tag < 0x58) {
      const n = tag - 0x40;
      const start = at + 1;
      if (n <= this.end - start) {
        this.charge(cost.str(n), at);
        const key = this.cachedStr(start, n);
        this.pos = start + n;
        return key;
      }
    }
    return this.fast();
  }

  /** Whether the len bytes at a and at b (both inside the input) are the same: four at a
   * time from five on (the last four overlapping), a third of a byte loop's time for a key. */
  private sameBytes(a: number, b: number, len: number): boolean {
    const buf = this.buf;
    if (len < 5) {
      for (let j = 0; j < len; j++) if (buf[a + j] !== buf[b + j]) return false;
      return true;
    }
    const dv = this.dv();
    const last = len - 4;
    for (let j = 0; j < last; j += 4) if (dv.getInt32(a + j, true) !== dv.getInt32(b + j, true)) return false;
    return dv.getInt32(a + last, true) === dv.getInt32(b + last, true);
  }

  /** A dict key read through the trie (see KeyNode): the child of `node` for it, or null
   * when the key is not a str (it is left in otherKey). The caller checks the child's
   * `distinct` (a duplicate key) at the key's offset. The hints tried and kept are those of
   * `hints`: `node` itself, or for a dict's first key the hints of its place (see
   * firstKeyHints). */
  private trieKey(node: KeyNode, hints: KeyNode): KeyNode | null {
    const buf = this.buf, keyAt = this.pos, id = this.decodeId, left = this.end - keyAt;
    let len = hints.hintLen;
    if (hints.hintDecode === id && len <= left) {
      if (this.sameBytes(hints.hintPos, keyAt, len)) {
        // The same bytes: the same str (valid, and charged as a str if it is not a REF).
        if (buf[keyAt] !== 0x93) this.charge(cost.str(len - 1), keyAt);
        this.pos = keyAt + len;
        return hints.hint;
      }
    }
    len = hints.hint2Len;
    if (hints.hint2Decode === id && len <= left) {
      if (this.sameBytes(hints.hint2Pos, keyAt, len)) {
        if (buf[keyAt] !== 0x93) this.charge(cost.str(len - 1), keyAt);
        this.pos = keyAt + len;
        // Swapped in front: records of two shapes that alternate keep both hints.
        const child = hints.hint2!;
        hints.pushHint(child, keyAt, len, id);
        return child;
      }
    }
    const key = this.fastKey();
    if (typeof key !== "string") {
      this.otherKey = key;
      return null;
    }
    const child = node.child(key);
    // A hint when the key was read whole from its own bytes: a REF, or an untracked SHORT_STR
    // (a tracked one is a new value to record each time it is met).
    const tag = buf[keyAt];
    if (tag === 0x93 || (tag >= 0x40 && tag < 0x58)) hints.pushHint(child, keyAt, this.pos - keyAt, id);
    return child;
  }

  /**
   * An untracked object-mode dict of n pairs (0 < n <= MAX_RECORD_KEYS), its head read: the
   * checks and charges of openDict, then its keys through the trie and its values into an
   * array kept for its depth, and the object made at the end by the literal of its key
   * sequence. No frame, unless a key a literal cannot take makes the machine finish it.
   */
  private fastRecord(n: number, at: number, entered: boolean): unknown {
    if (!entered) {
      this.enter(at);
      if (n * 2 > this.end - this.pos) throw this.err("length_too_large", at, `dict declares ${n} pairs but only ${this.end - this.pos} bytes are left`);
    }
    this.charge(cost.dict(n), at);
    const place = this.place;
    const holder = place === null ? keyTrie : firstKeyHints(place);
    const tpl = holder.tpl;
    const tplRead = tpl !== null && tpl.n === n && holder.tplDecode === this.decodeId ? tpl.read : undefined;
    // The common record first, before any array is fetched: a reader by the template, else
    // the reader of the keys read last at this place.
    const reader = tplRead === undefined ? holder.lastReader : null;
    let record: unknown = MISS;
    if (tplRead !== undefined && tplRead !== null) record = tplRead(this, tpl!);
    else if (reader !== null && reader.n === n) record = reader.read(this);
    if (record !== MISS) {
      this.place = place;
      this.depth--;
      return record;
    }
    const depth = this.depth;
    let values = this.recordValues[depth];
    if (values === undefined || values.length < n) values = this.recordValues[depth] = newArray(Math.max(n, 8));
    // Where each key was read, for the template (see KeyTemplate); per depth, as the values.
    let pos = this.recordKeyPos[depth];
    if (pos === undefined) pos = this.recordKeyPos[depth] = new Int32Array(MAX_RECORD_KEYS);
    if (depth > this.recordDepth) this.recordDepth = depth;
    let node = keyTrie, hints = holder, i = 0;
    const firstKeyAt = this.pos;
    // Keys read by the template: as many as its first ones the dict wrote alike.
    let fromTpl = 0;
    if (tplRead !== undefined && tplRead !== null) {
      // The reader missed at key missAt: what it read is in missValues and missPos.
      i = fromTpl = this.missAt;
      for (let k = 0; k < i; k++) {
        values[k] = this.missValues[k];
        pos[k] = this.missPos[k];
      }
      this.missValues.fill(undefined, 0, i);
      if (i > 0) node = hints = tpl!.nodes[i];
    } else if (tplRead === null) {
      const dv = this.dv(), end = this.end, t = tpl!, words = t.words, masks = t.masks, lens = t.lens, charges = t.charges, nodes = t.nodes;
      for (; i < n; i++) {
        const p = this.pos;
        if (end - p < 4 || (dv.getInt32(p, true) & masks[i]) !== words[i]) break;
        const c = charges[i];
        if (c !== 0) this.charge(c, p);
        pos[i] = p;
        this.pos = p + lens[i];
        this.place = nodes[i + 1];
        values[i] = this.fast();
      }
      fromTpl = i;
      if (i > 0) node = hints = nodes[i];
    } else if (reader !== null && reader.n === n) {
      // The key reader missed at key missAt: what it read is in missValues.
      i = this.missAt;
      for (let k = 0; k < i; k++) values[k] = this.missValues[k];
      this.missValues.fill(undefined, 0, i);
      if (i > 0) {
        node = hints = reader.nodes[i];
        // The reader's keys were not noted in pos: no template of this dict.
        fromTpl = -1;
      }
    }
    for (; i < n; i++) {
      const keyAt = this.pos;
      const next = this.trieKey(node, hints);
      if (next === null || !next.plain) {
        if (next !== null && !next.distinct) throw this.err("duplicate_key", keyAt);
        this.place = place;
        return this.recordToMachine(n, i, at, keyAt, node, next, values);
      }
      pos[i] = keyAt;
      node = hints = next;
      this.place = next;
      values[i] = this.fast();
    }
    this.place = place;
    this.depth--;
    const make = node.make ?? recordMaker(node, this);
    if (fromTpl < n) {
      // Read (at least in part) by the trie: the template of these keys, when they allow one.
      if (fromTpl >= 0) this.keepTemplate(holder, node, pos, n);
      if (make !== null) {
        // A sequence worth a maker is worth a reader, tried first at this place next time
        // when its keys are strs (REFs to keys, as Python writes them, are not).
        const tag = this.buf[firstKeyAt];
        if ((tag >= 0x40 && tag < 0x58) || tag === 0x68) {
          const r = node.reader !== undefined ? node.reader : recordReader(node);
          if (r !== null) holder.lastReader = r;
        } else {
          holder.lastReader = null;
        }
      }
    }
    if (make !== null) return make(values);
    const obj: Record<string, unknown> = {};
    const keys = node.keys();
    for (let i = 0; i < n; i++) obj[keys[i]] = values[i];
    return obj;
  }

  /** Makes `holder`'s template (see KeyTemplate) the keys of the dict just read, of the trie
   * node `node`, key i at pos[i] (each key ends where its value starts): when each is a REF
   * or an untracked SHORT_STR in at most 4 bytes. Else the holder has none. */
  private keepTemplate(holder: KeyNode, node: KeyNode, pos: Int32Array, n: number): void {
    const buf = this.buf;
    let tpl = holder.tpl;
    holder.tpl = null;
    for (let i = 0; i < n; i++) {
      const p = pos[i], tag = buf[p];
      // A REF's varint ends at its first byte below 0x80 (it was read whole, so it is there).
      let len: number;
      if (tag === 0x93) {
        len = 2;
        while (len <= 4 && buf[p + len - 1] >= 0x80) len++;
      } else if (tag >= 0x40 && tag < 0x44) {
        len = tag - 0x3f;
      } else {
        return;
      }
      if (len > 4) return;
    }
    if (tpl === null || tpl.n !== n) tpl = new KeyTemplate(n);
    const nodes = tpl.nodes;
    for (let k: KeyNode | null = node; k !== null; k = k.parent) nodes[k.depth] = k;
    for (let i = 0; i < n; i++) {
      const p = pos[i], tag = buf[p];
      let len: number;
      if (tag === 0x93) {
        len = 2;
        while (buf[p + len - 1] >= 0x80) len++;
        tpl.charges[i] = 0;
      } else {
        len = tag - 0x3f;
        tpl.charges[i] = cost.str(len - 1);
      }
      let w = 0;
      for (let j = 0; j < len; j++) w |= buf[p + j] << (8 * j);
      tpl.words[i] = w;
      tpl.masks[i] = len === 4 ? -1 : (1 << (8 * len)) - 1;
      tpl.lens[i] = len;
    }
    tpl.read = node.make ? templateReader(node, tpl, this) : null;
    holder.tpl = tpl;
    holder.tplDecode = this.decodeId;
  }

  /** fastRecord met, as key i, a key a literal cannot take (`next`, or otherKey when it is not
   * a str): the dict goes on as a frame of the machine, which makes it key by key. */
  private recordToMachine(n: number, i: number, at: number, keyAt: number, node: KeyNode, next: KeyNode | null, values: unknown[]): unknown {
    const f = this.pushFrame(F.DictRecord, at);
    if (f.scratch === null || f.scratch.length < n) f.scratch = newArray(Math.max(n, 8));
    if (f.keyScratch === null || f.keyScratch.length < n) f.keyScratch = new Array<string>(Math.max(n, 8)).fill("");
    const keys = node.keys();
    for (let k = 0; k < i; k++) {
      f.scratch[k] = values[k];
      f.keyScratch[k] = keys[k];
    }
    f.values = f.scratch;
    f.node = null;
    f.rowIndex = i;
    f.remaining = n - i;
    f.count = n;
    f.expectKey = true;
    f.childAt = keyAt;
    if (next !== null) this.acceptStrKey(f, next.key);
    else this.deliver(f, this.otherKey);
    this.otherKey = undefined;
    return this.resume(f);
  }

  /** An object-mode dict of more keys than a record takes, filled key by key. */
  private fastObjectDict(f: Frame): unknown {
    const obj = f.container as Record<string, unknown>;
    const n = f.count;
    for (let i = 0; i < n; i++) {
      f.childAt = this.pos;
      const key = this.fastKey();
      if (typeof key !== "string" || isIndexKey(key)) {
        f.remaining = n - i;
        f.expectKey = true;
        this.deliver(f, key);
        return this.resume(f);
      }
      if (hasOwn.call(obj, key)) throw this.err("duplicate_key", f.childAt);
      const v = this.fast();
      if (key === "__proto__") Object.defineProperty(obj, "__proto__", { value: v, enumerable: true, writable: true, configurable: true });
      else obj[key] = v;
    }
    return this.finishFrame(f);
  }

  /** A dict as a Map: its str keys read through the trie while they are strs. */
  private fastMap(f: Frame): unknown {
    const map = f.container as Map<unknown, unknown>;
    const n = f.count;
    const place = this.place;
    let node: KeyNode | null = n <= MAX_RECORD_KEYS ? keyTrie : null;
    let hints = place === null ? keyTrie : firstKeyHints(place);
    for (let i = 0; i < n; i++) {
      const keyAt = this.pos;
      f.childAt = keyAt;
      let key: unknown;
      if (node !== null) {
        const next = this.trieKey(node, hints);
        if (next !== null) {
          if (!next.distinct) throw this.err("duplicate_key", keyAt);
          node = hints = next;
          this.place = next;
          map.set(next.key, this.fast());
          continue;
        }
        this.place = place;
        key = this.otherKey;
        this.otherKey = undefined;
        node = null;
      } else {
        key = this.fastKey();
      }
      if (typeof key === "string") {
        if (map.has(key)) throw this.err("duplicate_key", f.childAt);
      } else {
        this.checkKey(f, key, "duplicate_key");
      }
      map.set(key, this.fast());
    }
    this.place = place;
    return this.finishFrame(f);
  }

  /** Gives a complete child value to the open frame; true when the frame is then complete. */
  private deliver(f: Frame, v: unknown): boolean {
    switch (f.type) {
      case F.DictRecord:
        if (f.expectKey) {
          if (typeof v === "string") {
            this.acceptStrKey(f, v);
            return false;
          }
          this.recordToObject(f);
          return this.deliver(f, v);
        }
        f.values![f.rowIndex++] = v;
        f.expectKey = true;
        return --f.remaining === 0;
      case F.List:
      case F.Tuple:
        f.container[f.count - f.remaining] = v;
        return --f.remaining === 0;
      case F.ObjectDict:
        if (f.expectKey) {
          if (typeof v !== "string" || isIndexKey(v)) {
            this.toMap(f);
            return this.deliver(f, v);
          }
          if (hasOwn.call(f.container, v)) throw this.err("duplicate_key", f.childAt);
          f.key = v;
          f.expectKey = false;
          return false;
        }
        if (f.key === "__proto__") Object.defineProperty(f.container, "__proto__", { value: v, enumerable: true, writable: true, configurable: true });
        else f.container[f.key as string] = v;
        f.expectKey = true;
        return --f.remaining === 0;
      case F.Dict:
        if (f.expectKey) {
          this.checkKey(f, v, "duplicate_key");
          f.key = v;
          f.expectKey = false;
          return false;
        }
        f.container.set(f.key, v);
        f.expectKey = true;
        return --f.remaining === 0;
      case F.Set:
      case F.FrozenSet:
        this.checkKey(f, v, "duplicate_element");
        f.container.add(v);
        return --f.remaining === 0;
      case F.Records: {
        const keys = f.recordKeys!;
        if (keys.length < f.arity) this.recordsKey(f, v);
        else {
          f.values![f.rowIndex++] = v;
          if (f.rowIndex === f.arity) {
            // The row's index: `remaining` still counts this value, the last of the row.
            f.list![f.count - Math.ceil(f.remaining / f.arity)] = this.recordsRow(f, keys, f.values!);
            f.rowIndex = 0;
          }
        }
        return --f.remaining === 0;
      }
      case F.ObjectRows: {
        const values = f.values!;
        values[f.rowIndex++] = v;
        if (f.rowIndex === f.arity) {
          f.list![f.count - Math.ceil(f.remaining / f.arity)] = this.rowInstance(f.shape!, values);
          f.rowIndex = 0;
          if (f.remaining > 1 && this.rowKeepsValues(f.shape!)) f.values = newArray(f.arity);
        }
        return --f.remaining === 0;
      }
      case F.TupleList: {
        const row = f.row!;
        row[f.rowIndex++] = v;
        if (f.rowIndex === f.arity) {
          f.container.push(row);
          if (--f.remaining > 0) {
            f.row = newTuple(f.arity);
            f.rowIndex = 0;
          }
        }
        return f.remaining === 0;
      }
      case F.Supersede:
        if (!f.gotA) {
          f.gotA = true;
          if (this.pos >= this.end) throw this.err("truncated", this.end);
          if (this.buf[this.pos] !== 0x93) throw this.err("supersede_without_ref", this.pos);
          return false;
        }
        f.container = v;
        return true;
      case F.PlainRecord: {
        const name = f.shape!.fields![f.count - f.remaining];
        if (name === "__proto__") Object.defineProperty(f.container, name, { value: v, enumerable: true, writable: true, configurable: true });
        else f.container[name] = v;
        return --f.remaining === 0;
      }
      case F.ObjectFirst:
      case F.ObjectAfter:
      case F.ObjectFromFirst: {
        const index = f.count - f.remaining;
        f.values![index] = v;
        if (f.code !== 0) this.objectValue(f, index, v);
        return --f.remaining === 0;
      }
      case F.ExtCreateFirst:
      case F.ExtBuildAfter:
      case F.RecordValues:
        f.values![f.count - f.remaining] = v;
        return --f.remaining === 0;
    }
  }

  /** Closes the top frame and returns its value. */
  private finish(f: Frame): unknown {
    if (f.event !== null) {
      const ev = f.event;
      f.event = null;
      const v = this.finishFrame(f);
      ev.end = this.pos - this.delta;
      ev.value = v;
      return v;
    }
    return this.finishFrame(f);
  }

  private finishFrame(f: Frame): unknown {
    this.sp--;
    switch (f.type) {
      case F.List:
      case F.Dict:
      case F.ObjectDict:
      case F.PlainRecord:
      case F.Set:
        this.depth--;
        return f.container;
      case F.DictRecord: {
        // The scratch arrays keep their values until overwritten: they live with this
        // decoder, which lives for one decode, and clearing them cost a tenth of the time.
        this.depth--;
        const n = f.rowIndex, keys = f.keyScratch!;
        // The fast path walked the trie; the machine's keys (all checked) walk it now.
        const node = f.node ?? dictRecordNode(keys, n);
        f.node = null;
        const make = recordMaker(node, this);
        if (make !== null) return make(f.values!);
        const obj: Record<string, unknown> = {};
        for (let i = 0; i < n; i++) obj[keys[i]] = f.values![i];
        return obj;
      }
      case F.RecordValues:
        this.depth--;
        return f.shape!.factory!(f.values!, f.shape!.info);
      case F.TupleList:
        this.depth -= 2;
        return f.container;
      case F.Records:
        this.depth -= 2;
        f.container = null;
        f.recordKeys = null;
        f.rowMaker = null;
        return f.list;
      case F.ObjectRows:
        this.depth -= 2;
        f.columns = null;
        f.values = null;
        return f.list;
      case F.Tuple:
      case F.FrozenSet:
        this.depth--;
        if (f.trackOff >= 0) {
          this.incomplete!.delete(f.trackOff);
          this.record(f.trackOff, f.container);
        }
        return f.container;
      case F.Supersede:
        this.depth--;
        return f.container;
      case F.ExtCreateFirst:
        this.depth--;
        try {
          finishComposite(f.code, f.container, f.values!);
        } catch (e) {
          if (e instanceof InvalidExt) throw this.err("invalid_ext", f.at + this.delta, e.message);
          throw e;
        }
        return f.container;
      case F.ExtBuildAfter: {
        this.depth--;
        let built: unknown;
        try {
          built = buildComposite(f.code, f.values!);
        } catch (e) {
          if (e instanceof InvalidExt) throw this.err("invalid_ext", f.at + this.delta, e.message);
          throw e;
        }
        if (f.trackOff >= 0) {
          this.incomplete!.delete(f.trackOff);
          this.record(f.trackOff, built);
        }
        return built;
      }
      case F.ObjectFirst:
      case F.ObjectFromFirst:
        this.depth--;
        this.fillObject(f);
        return f.container;
      case F.ObjectAfter: {
        this.depth--;
        const built = this.buildObject(f);
        if (f.trackOff >= 0) {
          this.incomplete!.delete(f.trackOff);
          this.record(f.trackOff, built);
        }
        return built;
      }
    }
  }

  /**
   * Hash flooding (spec 7): V8 hashes the number and bigint keys of a Map or Set without a
   * seed (strs have a per-process seed), so a payload could hold thousands of keys that fall
   * into one bucket and make each insertion walk them all (measured: 20000 such bigints take
   * seconds). The decoder applies V8's own functions and allows at most HASH_LIMIT keys per
   * container whose hashes agree in their low 16 bits, which bounds every bucket of any table
   * of up to 2^16 buckets and, beyond, every bucket outright. The counts start after
   * HASH_LIMIT such keys, so small containers pay nothing.
   */
  private countHashedKey(f: Frame, k: number | bigint): void {
    f.hashedKeys++;
    if (f.hashedKeys <= HASH_LIMIT) return;
    let counts = f.hashCounts;
    if (counts === null) {
      // Counts up to 255 fit a byte; the limit is clamped to that.
      counts = f.hashCounts = new Uint8Array(65536);
      for (const earlier of f.container.keys()) {
        if (typeof earlier === "number" || typeof earlier === "bigint") counts[v8KeyHash(earlier) & 0xffff]++;
      }
    }
    const slot = v8KeyHash(k) & 0xffff;
    // Large containers spread their keys over the 2^16 classes unevenly even when honest;
    // the limit grows with the number of keys the container declares (the work stays bounded
    // by a multiple of it): a RECORDS's width, as its count is of rows, which share the keys.
    const n = f.type === F.Records ? f.arity : f.count;
    const limit = Math.max(HASH_LIMIT, 32 * Math.ceil(n / 65536));
    if (++counts[slot] > Math.min(limit, 255)) {
      throw this.err("hash_limit", f.childAt, `more than ${HASH_LIMIT} number keys of one container fall into one hash bucket`);
    }
  }

  /** A str key for a dict frame: checked for duplicates and kept until its value comes. */
  private acceptStrKey(f: Frame, key: string): void {
    if (f.type === F.DictRecord) {
      if (key === "__proto__" || isIndexKey(key)) {
        this.recordToObject(f);
        return this.acceptStrKey(f, key);
      }
      const keys = f.keyScratch!;
      for (let i = 0; i < f.rowIndex; i++) if (keys[i] === key) throw this.err("duplicate_key", f.childAt);
      keys[f.rowIndex] = key;
      f.key = key;
      f.expectKey = false;
      return;
    }
    if (f.type === F.ObjectDict && isIndexKey(key)) this.toMap(f);
    if (f.type === F.ObjectDict ? hasOwn.call(f.container, key) : f.container.has(key)) {
      throw this.err("duplicate_key", f.childAt);
    }
    f.key = key;
    f.expectKey = false;
  }

  /** A dict being collected as a record met a key a literal cannot take: it becomes an
   * object (or then a Map) made pair by pair from what it has so far. */
  private recordToObject(f: Frame): void {
    const obj: Record<string, unknown> = {};
    const keys = f.keyScratch!, values = f.values!;
    for (let i = 0; i < f.rowIndex; i++) {
      obj[keys[i]] = values[i];
      values[i] = undefined;
    }
    f.container = obj;
    f.type = F.ObjectDict;
    f.values = null;
  }

  /** An object-mode dict met a key an object cannot keep in order: it becomes a Map. */
  private toMap(f: Frame): void {
    const obj = f.container as Record<string, unknown>;
    const map = new Map<unknown, unknown>();
    for (const k of Object.keys(obj)) map.set(k, obj[k]);
    f.container = map;
    f.type = F.Dict;
  }

  private checkKey(f: Frame, v: unknown, duplicate: "duplicate_key" | "duplicate_element"): void {
    if (typeof v !== "object" || v === null) {
      // A str, int, non-integral float, bool or None: the Map or Set itself compares it.
      if (f.container.has(v)) throw this.err(duplicate, f.childAt);
      if (typeof v === "number" || typeof v === "bigint") this.countHashedKey(f, v);
      return;
    }
    const keys = (f.keys ??= new KeyTable());
    const problem = keys.add(v, this);
    if (problem !== 0) {
      const at = f.childAt;
      switch (problem) {
        case 1: throw this.err("unhashable", at, `${describe(v)} cannot be a dict key or set element`);
        case 2: throw this.err(duplicate, at);
        case 3: throw this.err("hash_limit", at, "hashing keys took more work than the input allows");
      }
    }
  }

  /** Fingerprint of a structured key (tuple, frozenset, ...), cached per object, with the
   * work charged to the hashing budget. Returns null when the budget is spent. */
  fingerprint(v: object, make: () => string): string | null {
    const fingerprints = (this.fingerprints ??= new Map());
    let fp = fingerprints.get(v);
    if (fp === undefined) {
      fp = make();
      fingerprints.set(v, fp);
    }
    this.hashWork += fp.length;
    return this.hashWork > this.hashBudget ? null : fp;
  }

  private value(): unknown {
    return this.tracer === null ? this.untracedValue() : this.tracedValue();
  }

  private tracedValue(): unknown {
    const at = this.pos;
    const tag = at < this.end ? this.buf[at] : -1;
    const ev: TraceEvent = {
      offset: at - this.delta, end: null, depth: this.depth, tag, name: tag < 0 ? "" : tagName(tag), headEnd: null,
      tracked: null, info: null, value: undefined,
    };
    if (tag < 0) return this.untracedValue();
    const reserved = ev.name === "RESERVED";
    if ((tag & 0xc0) === 0xc0 && !reserved) {
      const index = (this.trackedIndex ??= new Map());
      ev.tracked = index.size;
      index.set(at - this.bodyStart, ev.tracked);
    }
    if (!reserved) this.tracer!.push(ev);
    this.headPos = -1;
    const v = this.untracedValue();
    const code = tag & 0x40 ? tag & 0x7f : tag;
    if (v === PENDING) {
      const f = this.stack[this.sp - 1];
      f.event = ev;
      ev.headEnd = this.pos - this.delta;
      switch (f.type) {
        case F.TupleList: ev.info = ["tuple_list", f.remaining, f.arity]; break;
        case F.Records: ev.info = ["records", f.count, f.arity]; break;
        case F.ObjectRows: ev.info = this.rowsInfo(f.count); break;
        case F.Supersede: ev.info = ["supersede"]; break;
        case F.ExtCreateFirst: case F.ExtBuildAfter: ev.info = ["ext", EXT_NAMES[f.code], null]; break;
        case F.ObjectFirst: case F.ObjectAfter: case F.ObjectFromFirst: case F.PlainRecord: case F.RecordValues: {
          const sh = f.shape!;
          ev.info = ["object", this.lastShapeNumber, this.lastShapeDefined, [sh.module, sh.qualname, sh.kind, sh.fields]];
          break;
        }
        case F.Dict: case F.ObjectDict: case F.DictRecord: case F.List: case F.Tuple: case F.Set: case F.FrozenSet:
          ev.info = ["container", f.remaining];
          break;
      }
      return v;
    }
    ev.end = this.pos - this.delta;
    ev.value = v;
    ev.headEnd = this.headPos >= 0 ? this.headPos - this.delta : ev.end;
    if (tag === 0x93) {
      ev.info = ["ref", this.lastRef + this.bodyStart - this.delta, this.trackedIndex?.get(this.lastRef) ?? -1];
    } else if (code === 0x78 || code === 0x79) {
      ev.info = ["packed", (v as unknown[]).length];
    } else if (code === 0x7c) {
      ev.info = ["tuple_list", 0, 0];
    } else if (code === 0x7d) {
      ev.info = this.rowsInfo(0);
    } else if (code === 0x76) {
      ev.info = ["ext", EXT_NAMES[this.buf[at + 1]], ev.end - ev.headEnd];
    } else if ((code >= 0x58 && code < 0x68) || (code >= 0x71 && code <= 0x75)) {
      ev.info = ["container", 0];
    } else if ((code >= 0x40 && code < 0x58) || (code >= 0x68 && code <= 0x6b) || code === 0x6d) {
      ev.info = ["data", ev.end - ev.headEnd];
    } else {
      ev.info = ["scalar"];
    }
    return v;
  }

  /** Reads one value: returns it, or PENDING after opening a frame for a container. */
  private untracedValue(): unknown {
    const buf = this.buf;
    const at = this.pos;
    if (at >= this.end) throw this.err("truncated", this.end);
    const tag = buf[at];
    this.pos = at + 1;
    if (tag < 0x40) return tag;
    if (tag >= 0x80 && tag < 0x90) return tag - 0x90;
    switch (tag) {
      case 0x90: return null;
      case 0x91: return false;
      case 0x92: return true;
      case 0x93: return this.reference(at);
    }
    if (tag === 0x94) {
      this.enter(at);
      const f = this.pushFrame(F.Supersede, at);
      f.gotA = false;
      f.remaining = 1;
      return PENDING;
    }
    if ((tag & 0x40) === 0) throw this.err("unknown_tag", at, `tag 0x${tag.toString(16)} is reserved`);
    let trackOff = -1;
    if (tag & 0x80) {
      this.charge(cost.SCALAR, at);
      trackOff = at - this.bodyStart;
    }
    return this.trackable(tag & 0x7f, at, trackOff);
  }

  private trackable(code: number, at: number, trackOff: number): unknown {
    if (code < 0x58) {
      const n = code - 0x40;
      const s = this.str(n, at, at + 1, false);
      if (trackOff >= 0) this.record(trackOff, s);
      return s;
    }
    if (code < 0x5c) return this.openList(code - 0x58, at, trackOff);
    if (code < 0x60) return this.openTuple(code - 0x5c, at, trackOff);
    if (code < 0x68) return this.openDict(code - 0x60, at, trackOff);
    let v: unknown;
    switch (code) {
      case 0x68:
      case 0x69: {
        const n = this.lengthVarint();
        v = this.str(n, at, this.pos, code === 0x69);
        break;
      }
      case 0x6a:
      case 0x6b: {
        const n = this.lengthVarint();
        if (n > this.end - this.pos) throw this.err("truncated", at);
        this.charge(code === 0x6b ? cost.bytearray(n) : cost.bytes(n), at);
        this.headPos = this.pos;
        const bytes = this.buf.slice(this.pos, this.pos + n);
        this.pos += n;
        v = code === 0x6b ? new ByteArray(bytes.buffer, 0, n) : bytes;
        break;
      }
      case 0x6c: {
        this.charge(cost.SCALAR, at);
        v = this.signedVarint();
        break;
      }
      case 0x6d:
        v = this.bigint(at);
        break;
      case 0x6e: {
        if (this.end - this.pos < 8) throw this.err("truncated", at + 1);
        this.charge(cost.SCALAR, at);
        const x = this.dv().getFloat64(this.pos, true);
        v = Number.isInteger(x) ? new Float(x) : x !== x ? new Float(x, this.buf.slice(this.pos, this.pos + 8)) : x;
        this.pos += 8;
        break;
      }
      case 0x6f:
        v = this.float32(at);
        break;
      case 0x70: {
        if (this.end - this.pos < 16) throw this.err("truncated", at + 1);
        this.charge(cost.SCALAR, at);
        v = new Complex(this.dv().getFloat64(this.pos, true), this.dv().getFloat64(this.pos + 8, true));
        this.pos += 16;
        break;
      }
      case 0x71:
        this.enter(at);
        return this.openList(this.containerCount(at, 1), at, trackOff, true);
      case 0x72:
        this.enter(at);
        return this.openTuple(this.containerCount(at, 1), at, trackOff, true);
      case 0x73:
        this.enter(at);
        return this.openDict(this.containerCount(at, 2), at, trackOff, true);
      case 0x74:
      case 0x75:
        this.enter(at);
        return this.openSet(this.containerCount(at, 1), at, trackOff, code === 0x75);
      case 0x76:
        return this.ext(at, trackOff);
      case 0x77:
        return this.object(at, trackOff);
      case 0x78:
        this.enter(at);
        v = this.packedInts(this.containerCount(at, 1), at);
        this.depth--;
        break;
      case 0x79:
        this.enter(at);
        v = this.packedFloats(this.containerCount(at, 8), at);
        this.depth--;
        break;
      case 0x7c:
        return this.openTupleList(at, trackOff);
      case 0x7b:
        return this.openRecords(at, trackOff);
      case 0x7d:
        return this.openObjectRows(at, trackOff);
      default:
        throw this.err("unknown_tag", at, `tag 0x${(code | (trackOff >= 0 ? 0x80 : 0)).toString(16)} is reserved`);
    }
    if (trackOff >= 0) this.record(trackOff, v);
    return v;
  }

  /** A length varint for a byte payload, as a number (a bigint cannot fit what remains). */
  private lengthVarint(): number {
    const n = this.varint();
    return typeof n === "number" ? n : Number.MAX_SAFE_INTEGER;
  }

  /** A container's count varint, checked against the remaining input (`per` bytes per item). */
  private containerCount(at: number, per: number): number {
    // A one-byte count (the common case) without the varint reader.
    const p = this.pos;
    if (p < this.end) {
      const b = this.buf[p];
      if (b < 0x80 && b * per <= this.end - p - 1) {
        this.pos = p + 1;
        return b;
      }
    }
    const n = this.varint();
    const left = this.end - this.pos;
    if (typeof n !== "number" || n > Math.floor(left / per)) {
      throw this.err("length_too_large", at, `container declares ${n} items but only ${left} bytes are left`);
    }
    return n;
  }

  private str(n: number, at: number, start: number, surrogates: boolean): string {
    if (n > this.end - start) throw this.err("truncated", at);
    this.charge(cost.str(n), at);
    this.headPos = start;
    const end = start + n;
    this.pos = end;
    const buf = this.buf;
    if (!surrogates) {
      // A long str is made on its own (see AsciiWindow) and checked by the native decoder,
      // whose ASCII scan is far faster than a JS one over the same bytes (github_issues'
      // bodies: 2% of its decode).
      if (n >= LONG_STR) {
        const s = decodeUtf8(buf, start, end);
        if (s === null) throw this.err("invalid_utf8", start);
        return s;
      }
      if (this.window.enabled) {
        if (this.isAsciiSpan(start, end)) return this.window.slice(buf, start, end, this.end);
      } else if (n <= 64) {
        const ascii = asciiString(buf, start, n);
        if (ascii !== null) return ascii;
      }
    }
    const s = surrogates ? decodeUtf8Surrogates(buf, start, end) : decodeUtf8(buf, start, end);
    if (s === null) throw this.err("invalid_utf8", start);
    return s;
  }

  /** A dict key of n bytes at `start` (length already checked), through a small cache:
   * record payloads repeat the same keys, and a cached key is one lookup, not a new string. */
  private cachedStr(start: number, n: number): string {
    const buf = this.buf;
    let h = n;
    for (let i = 0; i < n; i++) h = (Math.imul(h, 31) + buf[start + i]) | 0;
    const slot = (h >>> 0) & (KEY_CACHE_SIZE - 1);
    const entry = keyCache[slot];
    if (entry !== undefined && entry.bytes.length === n) {
      const b = entry.bytes;
      let i = 0;
      while (i < n && b[i] === buf[start + i]) i++;
      if (i === n) return entry.text;
    }
    // A flat string, not one cut from the window: a key lives on in the cache (and would
    // keep its window), and V8 would copy a sliced one each time it became a property name.
    let text = n <= 64 ? asciiString(buf, start, n) : null;
    if (text === null) {
      text = this.str(n, start - 1, start, false);
      this.spent -= cost.str(n); // str() charged again what the caller charged
    }
    keyCache[slot] = { bytes: buf.slice(start, start + n), text };
    return text;
  }

  private bigint(at: number): bigint {
    const n = this.lengthVarint();
    if (n > this.end - this.pos) throw this.err("truncated", at);
    const buf = this.buf;
    const start = this.pos;
    const last = n > 0 ? buf[start + n - 1] : 0;
    if (n < 9) throw this.err("noncanonical_int", at, "BIGINT holds a value inside the i64 range");
    const prev = buf[start + n - 2];
    if ((last === 0x00 && prev < 0x80) || (last === 0xff && prev >= 0x80)) {
      throw this.err("noncanonical_int", at, "BIGINT has a redundant sign byte");
    }
    this.headPos = start;
    let v = 0n;
    for (let i = start + n - 1; i >= start; i--) v = (v << 8n) | BigInt(buf[i]);
    if (last & 0x80) v -= 1n << BigInt(8 * n);
    if (v >= -(1n << 63n) && v < 1n << 63n) throw this.err("noncanonical_int", at, "BIGINT holds a value inside the i64 range");
    this.charge(cost.bigint(n), at);
    this.pos = start + n;
    return v;
  }

  private openList(n: number, at: number, trackOff: number, entered = false): unknown {
    if (!entered) {
      this.enter(at);
      if (n > this.end - this.pos) throw this.err("length_too_large", at, `list declares ${n} items but only ${this.end - this.pos} bytes are left`);
    }
    this.charge(cost.list(n), at);
    const list: unknown[] = n === 0 ? [] : newArray(n);
    if (trackOff >= 0) this.record(trackOff, list);
    if (n === 0) {
      this.depth--;
      return list;
    }
    const f = this.pushFrame(F.List, at);
    f.container = list;
    f.remaining = n;
    f.count = n;
    return PENDING;
  }

  private openTuple(n: number, at: number, trackOff: number, entered = false): unknown {
    if (!entered) {
      this.enter(at);
      if (n > this.end - this.pos) throw this.err("length_too_large", at, `tuple declares ${n} items but only ${this.end - this.pos} bytes are left`);
    }
    this.charge(cost.tuple(n), at);
    // new Tuple(n) filled by index: far faster in V8 than pushing onto an Array subclass.
    const t = newTuple(n);
    if (n === 0) {
      this.depth--;
      if (trackOff >= 0) this.record(trackOff, t);
      return t;
    }
    const f = this.pushFrame(F.Tuple, at);
    f.container = t;
    f.remaining = n;
    f.count = n;
    if (trackOff >= 0) {
      f.trackOff = trackOff;
      (this.incomplete ??= new Set()).add(trackOff);
    }
    return PENDING;
  }

  private openDict(n: number, at: number, trackOff: number, entered = false): unknown {
    if (!entered) {
      this.enter(at);
      if (n > Math.floor((this.end - this.pos) / 2)) throw this.err("length_too_large", at, `dict declares ${n} pairs but only ${this.end - this.pos} bytes are left`);
    }
    this.charge(cost.dict(n), at);
    // A dict that a REF may refer to stays a Map: it must not change type once handed out.
    const asObject = this.objectDicts && trackOff < 0;
    if (asObject && n > 0 && n <= MAX_RECORD_KEYS) {
      // An untracked dict of a few str keys: its pairs are collected and the object is made
      // at the end by one literal of its key sequence (record payloads repeat a few).
      const f = this.pushFrame(F.DictRecord, at);
      if (f.scratch === null || f.scratch.length < n) f.scratch = newArray(Math.max(n, 8));
      if (f.keyScratch === null || f.keyScratch.length < n) f.keyScratch = new Array<string>(Math.max(n, 8)).fill("");
      f.values = f.scratch;
      f.node = null;
      f.rowIndex = 0;
      f.remaining = n;
      f.count = n;
      f.expectKey = true;
      return PENDING;
    }
    const map = asObject ? {} : new Map();
    if (trackOff >= 0) this.record(trackOff, map);
    if (n === 0) {
      this.depth--;
      return map;
    }
    const f = this.pushFrame(asObject ? F.ObjectDict : F.Dict, at);
    f.container = map;
    f.remaining = n;
    f.count = n;
    f.expectKey = true;
    return PENDING;
  }

  private openSet(n: number, at: number, trackOff: number, frozen: boolean): unknown {
    this.charge(cost.set(n), at);
    const set = frozen ? new FrozenSet() : new Set();
    if (!frozen && trackOff >= 0) this.record(trackOff, set);
    if (n === 0) {
      this.depth--;
      if (frozen && trackOff >= 0) this.record(trackOff, set);
      return set;
    }
    const f = this.pushFrame(frozen ? F.FrozenSet : F.Set, at);
    f.container = set;
    f.remaining = n;
    f.count = n;
    if (frozen && trackOff >= 0) {
      f.trackOff = trackOff;
      (this.incomplete ??= new Set()).add(trackOff);
    }
    return PENDING;
  }

  private packedInts(n: number, at: number): unknown[] {
    this.charge(cost.list(n), at);
    this.headPos = this.pos;
    const out: unknown[] = new Array(n);
    const buf = this.buf;
    let pos = this.pos;
    const end = this.end;
    for (let i = 0; i < n; i++) {
      const itemAt = pos;
      let v: number | bigint;
      const b0 = pos < end ? buf[pos] : 0x80;
      if (b0 < 0x80) {
        pos++;
        v = (b0 & 1) ? -((b0 + 1) >> 1) : b0 >> 1;
      } else {
        this.pos = pos;
        v = this.signedVarint();
        pos = this.pos;
      }
      if (typeof v !== "number" || v < SMALL_INT_MIN || v > SMALL_INT_MAX) this.charge(cost.SCALAR, itemAt);
      out[i] = v;
    }
    this.pos = pos;
    return out;
  }

  private packedFloats(n: number, at: number): unknown[] {
    this.charge(cost.packedFloatList(n), at);
    this.headPos = this.pos;
    const out: unknown[] = new Array(n);
    const view = this.dv();
    let pos = this.pos;
    for (let i = 0; i < n; i++, pos += 8) {
      const x = view.getFloat64(pos, true);
      out[i] = Number.isInteger(x) ? new Float(x) : x !== x ? new Float(x, this.buf.slice(pos, pos + 8)) : x;
    }
    this.pos = pos;
    return out;
  }

  private openTupleList(at: number, trackOff: number): unknown {
    this.enter(at, 2);
    const rows = this.varint();
    const arity = this.varint();
    if (arity === 0) throw this.err("length_too_large", at, "a TUPLE_LIST's arity must be at least 1");
    const left = this.end - this.pos;
    if (rows !== 0 && (typeof rows !== "number" || typeof arity !== "number" || rows > Math.floor(left / arity))) {
      throw this.err("length_too_large", at, `TUPLE_LIST declares ${rows} rows of ${arity} items but only ${left} bytes are left`);
    }
    this.charge(cost.tupleList(rows as number, rows === 0 ? 0 : (arity as number)), at);
    const list: unknown[] = [];
    if (trackOff >= 0) this.record(trackOff, list);
    if (rows === 0) {
      this.depth -= 2;
      return list;
    }
    const f = this.pushFrame(F.TupleList, at);
    f.container = list;
    f.remaining = rows;
    f.arity = arity as number;
    f.row = newTuple(f.arity);
    f.rowIndex = 0;
    return PENDING;
  }

  /** A RECORDS after its tag (spec 5.12.1): two nesting levels at the tag, the count and the
   * width, then the list and all its dicts charged before the keys are read. The frame reads
   * the width keys, each checked as a dict key once (the container is a Map of them), then
   * the rows' values; `remaining` counts all of them. */
  private openRecords(at: number, trackOff: number): unknown {
    this.enter(at, 2);
    const rows = this.varint();
    const width = this.varint();
    if (width === 0) throw this.err("length_too_large", at, `RECORDS declares ${rows} rows of 0 keys; a RECORDS needs at least 1 key`);
    const left = this.end - this.pos;
    if (typeof rows !== "number" || typeof width !== "number" || rows >= Math.floor(left / width)) {
      throw this.err("length_too_large", at, `RECORDS declares ${rows} rows of ${width} keys, which with the keys need more than the ${left} bytes left`);
    }
    this.charge(cost.records(rows, width), at);
    // The list at its full length, filled by index (the count is bounded by the bytes left,
    // checked above, and charged): pushed one by one, it grew and was copied tens of times.
    const list: unknown[] = rows === 0 ? [] : newArray(rows);
    if (trackOff >= 0) this.record(trackOff, list);
    const f = this.pushFrame(F.Records, at);
    f.container = null;
    f.list = list;
    f.recordKeys = [];
    f.count = rows;
    f.arity = width;
    f.remaining = width + rows * width;
    f.rowIndex = 0;
    if (f.scratch === null || f.scratch.length < width) f.scratch = newArray(Math.max(width, 8));
    f.values = f.scratch;
    return PENDING;
  }

  /** Key number `recordKeys.length` of a RECORDS, checked as a dict key (section 7). Up to
   * RECORDS_SCAN str keys are compared one by one (most RECORDS have a few keys, and a Map per
   * list cost more than the comparisons); past that, or for another kind of key, they go into
   * a Map (the container), as a dict's keys do. Once all are in, the rows' form is chosen:
   * objects when the caller asked for them and every key is a str an object keeps in order,
   * else Maps. */
  private recordsKey(f: Frame, key: unknown): void {
    const keys = f.recordKeys!;
    if (typeof key === "string" && f.container === null && keys.length < RECORDS_SCAN) {
      for (let j = 0; j < keys.length; j++) if (keys[j] === key) throw this.err("duplicate_key", f.childAt);
    } else {
      if (f.container === null) {
        f.container = new Map();
        for (let j = 0; j < keys.length; j++) f.container.set(keys[j], null);
      }
      if (typeof key === "string") {
        if (f.container.has(key)) throw this.err("duplicate_key", f.childAt);
      } else {
        this.checkKey(f, key, "duplicate_key");
      }
      f.container.set(key, null);
    }
    keys.push(key);
    if (keys.length === f.arity) {
      let asObjects = this.objectDicts;
      for (let j = 0; asObjects && j < keys.length; j++) {
        const k = keys[j];
        asObjects = typeof k === "string" && k !== "__proto__" && !isIndexKey(k);
      }
      f.rowsAsObjects = asObjects;
      f.rowMaker = null;
    }
  }

  /**
   * The keys of the RECORDS of frame f, on the fast path: f.recordKeys and f.rowsAsObjects
   * set as recordsKey sets them, and the keys' trie node returned when they are all strs (else
   * null). A RECORDS of a place (the key whose value it is) mostly has the keys of the one
   * before it there, written in the same bytes: github_issues' 155 lists of labels, all of
   * the same 7 keys. Those of the last one at the place are kept (KeyNode.recPos and on), when
   * each is an untracked str or a REF (same bytes, same str; a tracked str is a new value to
   * record each time); a RECORDS whose keys' bytes are the same is charged what they charged
   * and takes them, with no key read, looked up or checked again (they were distinct, and
   * none is a number for the hash limits). When the charge would pass max_alloc, the keys
   * are read one by one, so that the error is the one key by key gives.
   */
  private fastRecordsKeys(f: Frame): KeyNode | null {
    const holder = this.place === null ? keyTrie : firstKeyHints(this.place);
    const width = f.arity, keysAt = this.pos;
    let node = holder.recNode;
    if (node !== null && holder.recDecode === this.decodeId && node.depth === width) {
      const len = holder.recLen;
      if (len <= this.end - keysAt && this.spent + holder.recCharge <= this.maxAlloc && this.sameBytes(holder.recPos, keysAt, len)) {
        this.spent += holder.recCharge;
        this.pos = keysAt + len;
        // Shared with the RECORDS that kept them: a frame's keys are only read once complete.
        f.recordKeys = holder.recKeys;
        f.rowsAsObjects = this.objectDicts && node.plain;
        f.rowMaker = null;
        return node;
      }
    }
    const buf = this.buf;
    // What the keys charge, when each is an untracked str or a REF (else -1: none kept).
    let charge = 0;
    for (let j = 0; j < width; j++) {
      const keyAt = this.pos;
      f.childAt = keyAt;
      this.recordsKey(f, this.fastKey());
      const tag = buf[keyAt];
      if (charge < 0 || tag === 0x93) continue;
      if (tag >= 0x40 && tag < 0x58) charge += cost.str(tag - 0x40);
      else if (tag === 0x68) {
        // The str's bytes: the key's, less its tag and its length's varint.
        let data = keyAt + 1;
        while (buf[data] >= 0x80) data++;
        charge += cost.str(this.pos - data - 1);
      } else charge = -1;
    }
    const keys = f.recordKeys!;
    for (let j = 0; j < width; j++) if (typeof keys[j] !== "string") charge = -1;
    if (charge < 0 || width > MAX_RECORD_KEYS) {
      holder.recNode = null;
      return null;
    }
    node = dictRecordNode(keys as string[], width);
    holder.recNode = node;
    holder.recKeys = keys as string[];
    holder.recPos = keysAt;
    holder.recLen = this.pos - keysAt;
    holder.recDecode = this.decodeId;
    holder.recCharge = charge;
    return node;
  }

  /** One row of a RECORDS from its values (in the keys' order). */
  private recordsRow(f: Frame, keys: unknown[], values: unknown[]): object {
    const width = f.arity;
    if (!f.rowsAsObjects) {
      const map = new Map<unknown, unknown>();
      for (let j = 0; j < width; j++) map.set(keys[j], values[j]);
      return map;
    }
    // Rows of one key sequence: the literal maker of that sequence (made at its second use).
    if (f.rowMaker === null) f.rowMaker = recordMaker(dictRecordNode(keys as string[], width), this);
    if (f.rowMaker !== null) return f.rowMaker(values);
    const obj: Record<string, unknown> = {};
    for (let j = 0; j < width; j++) obj[keys[j] as string] = values[j];
    return obj;
  }

  /** An OBJECT_ROWS after its tag (spec 5.17.9): two nesting levels at the tag, the count,
   * the shape as OBJECT's (defined here or referred to), which must be ATTRS with fields, the
   * float columns, then the rows against the bytes left and the list, its instances and the
   * columns' floats charged, all before the first row. The list is recorded before its rows;
   * the frame reads them field by field (`remaining` counts all their values). */
  private openObjectRows(at: number, trackOff: number): unknown {
    this.enter(at, 2);
    const rows = this.varint();
    const shape = this.shapeReference(at);
    const name = `${shape.module}.${shape.qualname}`;
    if (shape.kind !== "ATTRS") throw this.err("bad_shape", at, `${name} is a ${shape.kind} shape; object rows hold ATTRS instances only`);
    const k = shape.fields!.length;
    if (k === 0) throw this.err("length_too_large", at, `${name} has no fields: its rows would take no bytes`);
    const countAt = this.pos;
    const c = this.varint();
    if (typeof c !== "number" || c > k) throw this.err("bad_shape", countAt, `${c} float columns, but ${name} has ${k} fields`);
    let columns: Uint8Array | null = null;
    const indexes: number[] = [];
    for (let i = 0, last = -1; i < c; i++) {
      const indexAt = this.pos;
      const j = this.varint();
      if (typeof j !== "number" || j >= k) throw this.err("bad_shape", indexAt, `float column ${j}, but ${name} has ${k} fields`);
      if (j <= last) throw this.err("bad_shape", indexAt, `float column ${j} after ${last}: the columns must be strictly increasing`);
      (columns ??= new Uint8Array(k))[j] = 1;
      if (this.tracer !== null) indexes.push(j);
      last = j;
    }
    // Each row takes a byte at least per tagged field and 8 per float column.
    const left = this.end - this.pos;
    const least = k - c + 8 * c;
    if (typeof rows !== "number" || rows > Math.floor(left / least)) {
      throw this.err("length_too_large", at, `OBJECT_ROWS declares ${rows} rows of at least ${least} bytes but only ${left} bytes are left`);
    }
    this.charge(cost.objectRows(rows, k, c), at);
    // At its full length, as a RECORDS's list (see openRecords): structs_100k's 100000 rows
    // pushed one by one cost a fifth of its decode in copies and their garbage.
    const list: unknown[] = rows === 0 ? [] : newArray(rows);
    if (trackOff >= 0) this.record(trackOff, list);
    if (this.tracer !== null) {
      this.lastRowsShape = shape;
      this.lastColumns = indexes;
    }
    if (rows === 0) {
      this.depth -= 2;
      return list;
    }
    const f = this.pushFrame(F.ObjectRows, at);
    f.list = list;
    f.shape = shape;
    f.columns = columns;
    f.count = rows;
    f.arity = k;
    f.rowIndex = 0;
    f.remaining = rows * k;
    if (this.rowKeepsValues(shape)) f.values = newArray(k);
    else {
      if (f.scratch === null || f.scratch.length < k) f.scratch = newArray(Math.max(k, 8));
      f.values = f.scratch;
    }
    return PENDING;
  }

  /** Whether the instance of a row keeps the array of its values (a placeholder does): the
   * next row then needs an array of its own. */
  private rowKeepsValues(shape: Shape): boolean {
    return shape.allowed === null && !this.plainRecords;
  }

  /** The instance of a row of an OBJECT_ROWS from its values, as an ATTRS OBJECT's: a
   * placeholder (holding `values`), a plain record, or the allowed class's instance. Made
   * once the row is complete: nothing can refer to a row, so no value can see it before. */
  private rowInstance(shape: Shape, values: unknown[]): object {
    const allowed = shape.allowed;
    if (allowed !== null) {
      const obj = Object.create(allowed.cls?.prototype ?? Object.prototype);
      setAttrs(shape, obj, values);
      return obj;
    }
    if (!this.plainRecords) return new Placeholder(shape.module, shape.qualname, "ATTRS", shape.fields, values);
    const factory = shape.factory !== undefined ? shape.factory : recordFactory(shape);
    if (factory !== null) return factory(values, shape.info);
    // No factory (a field named __proto__, too many fields): field by field, as PlainRecord.
    const record: Record<string | symbol, unknown> = {};
    record[CLASS] = shape.info;
    setAttrs(shape, record, values);
    return record;
  }

  /** A float column's 8 bytes at `p`: the float they hold, as a FLOAT64's payload gives it (also
   * called by the generated row readers, recordFactory). */
  columnFloat(p: number): unknown {
    if (this.end - p < 8) throw this.err("truncated", p, "the input ends inside a float column's 8 bytes");
    const x = this.dv().getFloat64(p, true);
    this.pos = p + 8;
    return Number.isInteger(x) ? new Float(x) : x !== x ? new Float(x, this.buf.slice(p, p + 8)) : x;
  }

  /** The machine's float column value of the row being read by `f`, traced as a value of its
   * own (it has bytes, but no tag). */
  private columnValue(f: Frame): unknown {
    const at = this.pos;
    if (this.tracer === null) return this.columnFloat(at);
    const ev: TraceEvent = {
      offset: at - this.delta, end: null, depth: this.depth, tag: -1, name: "column", headEnd: null, tracked: null,
      info: ["column", f.shape!.fields![f.rowIndex]], value: undefined,
    };
    this.tracer.push(ev);
    // Cut short: the listing shows the bytes there are.
    if (this.end - at < 8) ev.headEnd = this.end - this.delta;
    const v = this.columnFloat(at);
    ev.end = ev.headEnd = this.pos - this.delta;
    ev.value = v;
    return v;
  }

  /** The fast path's rows of an OBJECT_ROWS (its frame opened): plain records by their
   * shape's readers (one that reads float columns in place when there are some), every other
   * row value by value. */
  private fastRows(f: Frame): unknown {
    const shape = f.shape!, list = f.list!, rows = f.count, k = f.arity, columns = f.columns;
    if (shape.allowed === null && this.plainRecords) {
      const factory = shape.factory !== undefined ? shape.factory : recordFactory(shape);
      if (factory !== null) {
        const info = shape.info;
        if (columns === null) {
          const read = shape.read!;
          for (let r = 0; r < rows; r++) list[r] = read(this, info);
        } else {
          const read = shape.readRow!;
          for (let r = 0; r < rows; r++) list[r] = read(this, info, columns);
        }
        f.remaining = 0;
        return this.finishFrame(f);
      }
    }
    const keeps = this.rowKeepsValues(shape);
    let values = f.values!;
    for (let r = 0; r < rows; r++) {
      if (columns === null) {
        for (let j = 0; j < k; j++) values[j] = this.fast();
      } else {
        for (let j = 0; j < k; j++) values[j] = columns[j] !== 0 ? this.columnFloat(this.pos) : this.fast();
      }
      list[r] = this.rowInstance(shape, values);
      if (keeps && r + 1 < rows) values = newArray(k);
    }
    f.remaining = 0;
    return this.finishFrame(f);
  }

  /** The trace of the OBJECT_ROWS just opened, of `rows` rows. */
  private rowsInfo(rows: number): TraceInfo {
    const sh = this.lastRowsShape!;
    return ["object_rows", rows, this.lastShapeNumber, this.lastShapeDefined, [sh.module, sh.qualname, sh.kind, sh.fields], this.lastColumns];
  }

  private reference(at: number): unknown {
    // The target: one or two varint bytes read inline (nearly every REF), else the reader.
    const buf = this.buf, p = at + 1;
    let t: number | bigint;
    const b0 = p < this.end ? buf[p] : 0x80;
    if (b0 < 0x80) {
      t = b0;
      this.pos = p + 1;
    } else if (p + 1 < this.end && buf[p + 1] < 0x80 && buf[p + 1] !== 0) {
      t = (b0 & 0x7f) | (buf[p + 1] << 7);
      this.pos = p + 2;
    } else {
      t = this.varint();
    }
    const r = at - this.bodyStart;
    if (typeof t === "number") this.lastRef = t;
    if (typeof t !== "number" || t >= r) throw this.err("bad_reference", at, `REF to ${t} does not point backwards`);
    if (this.incomplete !== null && this.incomplete.has(t)) {
      throw this.err("incomplete_reference", at, `REF to ${t}, a value still being built`);
    }
    const table = this.refTable, mask = this.refMask;
    let slot = 0;
    for (let i = refHash(t, mask); ; i = (i + 1) & mask) {
      const k = table[2 * i];
      if (k === t + 1) {
        slot = table[2 * i + 1];
        break;
      }
      if (k === 0) break;
    }
    if (slot === 0) throw this.err("bad_reference", at, `REF to ${t}, which is not a tracked value`);
    return this.refValues[slot - 1];
  }

  private ext(at: number, trackOff: number): unknown {
    const c = this.varint();
    if (typeof c !== "number" || c < 1 || c > MAX_EXT_CODE) throw this.err("unknown_ext", at, `EXT code ${c} is not defined`);
    if (isBlobCode(c)) {
      const n = this.lengthVarint();
      if (n > this.end - this.pos) throw this.err("truncated", at);
      this.charge(cost.extBlob(n), at);
      this.headPos = this.pos;
      const blob = this.buf.slice(this.pos, this.pos + n);
      this.pos += n;
      let v: unknown;
      try {
        v = c === ExtCode.OUT_OF_BAND ? this.outOfBand(blob, at) : parseExtBlob(c, blob);
      } catch (e) {
        if (e instanceof InvalidExt) throw this.err("invalid_ext", at, e.message);
        throw e;
      }
      if (trackOff >= 0) this.record(trackOff, v);
      return v;
    }
    this.enter(at);
    const k = compositeValueCount(c);
    if (k > this.end - this.pos) throw this.err("length_too_large", at, `EXT composite needs ${k} values`);
    this.charge(cost.object(k), at);
    const created = createComposite(c);
    const f = this.pushFrame(created === null ? F.ExtBuildAfter : F.ExtCreateFirst, at);
    f.code = c;
    f.container = created;
    f.values = k === 0 ? [] : newArray(k);
    f.remaining = k;
    f.count = k;
    if (trackOff >= 0) {
      if (created !== null) this.record(trackOff, created);
      else {
        f.trackOff = trackOff;
        (this.incomplete ??= new Set()).add(trackOff);
      }
    }
    return PENDING;
  }

  private outOfBand(blob: Uint8Array, at: number): unknown {
    const layout = parseOutOfBand(blob);
    const key = String(layout.index);
    const used = (this.usedBuffers ??= new Set());
    if (used.has(key)) throw new InvalidExt(`OUT_OF_BAND: buffer ${key} backs an earlier value already`);
    used.add(key);
    const buffers = this.options.buffers;
    if (buffers === undefined || buffers.length === 0) {
      throw this.err("missing_buffer", at, "the payload has out-of-band buffers: pass them as the buffers option");
    }
    if (typeof layout.index !== "number" || layout.index >= buffers.length) {
      throw this.err("missing_buffer", at, `buffer ${layout.index} was not passed (${buffers.length} given)`);
    }
    const buffer = buffers[layout.index];
    if (!(buffer instanceof Uint8Array) || BigInt(buffer.length) !== BigInt(layout.length)) {
      throw this.err("buffer_mismatch", at, `buffer ${layout.index} has ${buffer?.length} bytes, the payload says ${layout.length}`);
    }
    switch (layout.kind) {
      case 0: return buffer;
      case 1: return new ByteArray(buffer);
      case 2: return new PyArray(layout.typecode, buffer.slice());
      case 3: return new NDArray(layout.shape, layout.dtype, buffer);
      case 4: {
        const count = layout.shape.reduce<number>((a, d) => a * Number(d), 1);
        const itemSize = count === 0 ? 0 : buffer.length / count;
        return new NDArray(layout.shape, layout.dtype, fortranToC(buffer, layout.shape, itemSize));
      }
    }
  }

  private nameAt(field: boolean): string {
    const lenAt = this.pos;
    const n = this.varint();
    if (typeof n !== "number" || n < 1 || n > MAX_NAME) throw this.err("bad_name", lenAt, `name length ${n} is out of range 1..${MAX_NAME}`);
    if (n > this.end - this.pos) throw this.err("truncated", lenAt);
    const s = decodeUtf8(this.buf, this.pos, this.pos + n);
    this.pos += n;
    if (s === null) throw this.err("bad_name", lenAt, "name is not valid UTF-8");
    if (!field && !isDottedName(s)) throw this.err("bad_name", lenAt, `${JSON.stringify(s)} is not a dotted name`);
    return s;
  }

  /** The shape reference of an OBJECT or OBJECT_ROWS (tag at `at`) and, when it is 0, the
   * definition that follows (spec 5.17.2). */
  private shapeReference(at: number): Shape {
    const s = this.varint();
    if (s === 0) {
      const shape = this.shapeDefinition(at);
      this.lastShapeNumber = this.shapes.length - 1;
      this.lastShapeDefined = true;
      return shape;
    }
    if (typeof s !== "number" || s - 1 >= this.shapes.length) throw this.err("bad_shape", at, `shape ${s} is not defined yet`);
    this.lastShapeNumber = s - 1;
    this.lastShapeDefined = false;
    return this.shapes[s - 1];
  }

  private object(at: number, trackOff: number): unknown {
    const shape = this.shapeReference(at);
    this.enter(at);
    const k = valueCount(shape.kind, shape.fields);
    if (k > this.end - this.pos) throw this.err("length_too_large", at, `object needs ${k} values`);
    this.charge(cost.object(k), at);
    if (shape.allowed === null && shape.kind === "ATTRS" && this.options.placeholders === "plain") {
      if (trackOff < 0 && k > 0) {
        const factory = recordFactory(shape);
        if (factory !== null) {
          // No REF can refer to an untracked record, so it may be made once its values are
          // read, by one object literal of the shape's fields (as msgpackr's records are).
          const f = this.pushFrame(F.RecordValues, at);
          f.shape = shape;
          f.values = f.scratch !== null && f.scratch.length >= k ? f.scratch : (f.scratch = newArray(k));
          f.remaining = k;
          f.count = k;
          return PENDING;
        }
      }
      // A record: a plain object of the fields, with the class under the CLASS symbol.
      const record: Record<string | symbol, unknown> = {};
      record[CLASS] = shape.info;
      if (trackOff >= 0) this.record(trackOff, record);
      const f = this.pushFrame(F.PlainRecord, at);
      f.shape = shape;
      f.container = record;
      f.remaining = k;
      f.count = k;
      return PENDING;
    }
    const creation = creationOf(shape.kind);
    const values = k === 0 ? [] : newArray(k);
    let instance: unknown = null;
    if (creation === "first") instance = this.newInstance(shape, values);
    const f = this.pushFrame(creation === "first" ? F.ObjectFirst : creation === "after" ? F.ObjectAfter : F.ObjectFromFirst, at);
    f.shape = shape;
    f.container = instance;
    f.values = values;
    f.remaining = k;
    f.count = k;
    // code: 1 when the kind has value rules (or host checks) to apply as each value completes.
    f.code = hasValueRules(shape.kind) ? 1 : 0;
    if (trackOff >= 0) {
      if (creation === "first") this.record(trackOff, instance);
      else {
        // Built after, or made from the first value: incomplete until then (spec 6.2).
        f.trackOff = trackOff;
        (this.incomplete ??= new Set()).add(trackOff);
      }
    }
    return PENDING;
  }

  /** An untracked OBJECT of a defined ATTRS shape of placeholders (fastTag checked it, and
   * its shape number is the byte after the tag): the checks and charges of object(), then
   * the values, with no frame. A plain record is made from them by its shape's factory; a
   * placeholder holds them. */
  private fastObject(shape: Shape, at: number): unknown {
    const plain = this.plainRecords;
    const factory = !plain ? null : shape.factory !== undefined ? shape.factory : recordFactory(shape);
    // No factory (a field named __proto__, too many fields): the machine's record frame.
    if (plain && factory === null) return this.machineValue();
    this.pos = at + 2;
    this.enter(at);
    const k = shape.fields!.length;
    if (k > this.end - this.pos) throw this.err("length_too_large", at, `object needs ${k} values`);
    this.charge(cost.object(k), at);
    if (factory !== null) {
      const record = shape.read!(this, shape.info);
      this.depth--;
      return record;
    }
    const values = newArray(k);
    const instance = new Placeholder(shape.module, shape.qualname, shape.kind, shape.fields, values);
    for (let i = 0; i < k; i++) values[i] = this.fast();
    this.depth--;
    return instance;
  }

  /** The instance of a create-first or from-first-value shape, empty: a placeholder holds the
   * values array it is being filled with; an allowed class's instance gets them at the end. */
  private newInstance(shape: Shape, values: unknown[]): object {
    const allowed = shape.allowed;
    if (allowed === null || (allowed.cls === undefined && shape.kind !== "ATTRS" && shape.kind !== "STATE")) {
      return new Placeholder(shape.module, shape.qualname, shape.kind, shape.fields, values);
    }
    return Object.create(allowed.cls?.prototype ?? Object.prototype);
  }

  /** What a value is on the wire (spec 5.17.3 value rules), from the tag it started with: a
   * REF's target, or for a SUPERSEDE that of the REF that ends it. */
  private classAt(index: number): ValueClass {
    const buf = this.buf;
    let tag = buf[index];
    if (tag === 0x93 || tag === 0x94) {
      index = this.bodyStart + this.lastRef;
      tag = buf[index];
    }
    if (tag < 0x40 || (tag >= 0x80 && tag < 0x90)) return "int";
    if (tag === 0x90) return "None";
    if (tag === 0x91 || tag === 0x92) return "bool";
    const code = tag & 0x7f;
    if (code < 0x58) return "str";
    if (code < 0x5c) return "list";
    if (code < 0x60) return "tuple";
    if (code < 0x68) return "dict";
    switch (code) {
      case 0x68: case 0x69: return "str";
      case 0x6a: return "bytes";
      case 0x6b: return "bytearray";
      case 0x6c: case 0x6d: return "int";
      case 0x6e: case 0x6f: return "float";
      case 0x70: return "complex";
      case 0x71: case 0x78: case 0x79: case 0x7b: case 0x7c: case 0x7d: return "list";
      case 0x72: return "tuple";
      case 0x73: return "dict";
      case 0x74: return "set";
      case 0x75: return "frozenset";
      case 0x76: return EXT_NAMES[buf[index + 1]] ?? "EXT";
      default: return "OBJECT";
    }
  }

  /** A value of an OBJECT of a kind with value rules, as soon as it is complete: the rules
   * (spec 5.17.3), the allowed class's own checks, and for a kind made from its first value,
   * the instance, recorded now (spec 6.2). */
  private objectValue(f: Frame, index: number, v: unknown): void {
    const shape = f.shape!;
    const kind = shape.kind;
    const c = this.classAt(f.childAt);
    const problem = valueRule(kind, index, c);
    if (problem !== null) throw this.err("bad_state", f.at, `${shape.module}.${shape.qualname}: ${problem}`);
    const allowed = shape.allowed;
    if (index === 0 && allowed !== null) {
      if (allowed.base !== undefined && BUILTIN_BASES[allowed.base] !== c) {
        throw this.err("bad_state", f.at, `${shape.module}.${shape.qualname}: the builtin value must be ${describeClass(BUILTIN_BASES[allowed.base])}, not ${describeClass(c)}`);
      }
      if ((kind === "REDUCE_KW" || kind === "NEWOBJ_KW") && !isCall(v)) {
        throw this.err("bad_state", f.at, `${shape.module}.${shape.qualname}: the call must be a tuple of the arguments (a tuple) and the keyword arguments (a dict of str keys)`);
      }
    }
    if (index === 0 && f.type === F.ObjectFromFirst) {
      f.container = this.newInstance(shape, f.values!);
      if (f.trackOff >= 0) {
        this.incomplete!.delete(f.trackOff);
        this.record(f.trackOff, f.container);
        f.trackOff = -1;
      }
    }
  }

  private shapeDefinition(at: number): Shape {
    const start = this.pos;
    const module = this.nameAt(false);
    const qualname = this.nameAt(false);
    if (this.pos >= this.end) throw this.err("truncated", this.end);
    const kindAt = this.pos;
    const kindByte = this.buf[this.pos++];
    if (kindByte >= OBJECT_KINDS.length) throw this.err("bad_shape", kindAt, `object kind ${kindByte} is not defined`);
    const kind: ObjectKind = OBJECT_KINDS[kindByte];
    let fields: string[] | null = null;
    if (kind === "ATTRS" || kind === "TUPLE_FIELDS") {
      const countAt = this.pos;
      const n = this.varint();
      if (typeof n !== "number" || n > MAX_FIELDS) throw this.err("bad_shape", countAt, `${n} fields is above ${MAX_FIELDS}`);
      if (n > Math.floor((this.end - this.pos) / 2)) throw this.err("length_too_large", countAt, `shape declares ${n} fields`);
      fields = [];
      const seen = new Set<string>();
      for (let i = 0; i < n; i++) {
        const nameAt = this.pos;
        const name = this.nameAt(true);
        if (seen.has(name)) throw this.err("bad_shape", nameAt, `field ${JSON.stringify(name)} is repeated`);
        seen.add(name);
        fields.push(name);
      }
    }
    this.charge(cost.shape(this.pos - start), at);
    const allowed = this.resolve(module, qualname, kind, fields, at);
    // Every property from the start (factory and the readers too): one hidden class for all
    // shapes. A property added later (readRow was) moves a shape to a class V8 holds only
    // weakly: each full GC that found no shape left dropped it, and with it the optimized
    // fastRows, which then ran unoptimized again after every GC.
    const shape: Shape = {
      module, qualname, kind, fields, allowed, info: { module, qualname, kind, fields }, factory: undefined, read: undefined, readRow: undefined,
      placeholderAttrs: allowed === null && kind === "ATTRS" && fields !== null && fields.length > 0,
    };
    this.shapes.push(shape);
    return shape;
  }

  private resolve(module: string, qualname: string, kind: ObjectKind, fields: string[] | null, at: number): AllowedClass | null {
    const name = `${module}:${qualname}`;
    const allowed = this.options.types?.find((t) => t.name === name);
    if (allowed === undefined) {
      // The fixed tables (spec 5.17.4): builtin exceptions and types, as placeholders.
      if (inFixedTables(module, qualname, kind)) return { name, kind };
      if (this.options.placeholders) return null;
      const e = new ClassNotAllowedError(at - this.delta, module, qualname);
      throw e;
    }
    if (allowed.kind !== kind) throw this.err("bad_shape", at, `${name} is not written as ${kind}`);
    if (allowed.base !== undefined && !baseFits(kind, allowed.base)) throw this.err("bad_shape", at, `${name} (a ${allowed.base} subclass) is not written as ${kind}`);
    if (allowed.fields !== undefined && fields !== null) {
      if (this.options.unknownFields === "error") {
        const unknown = fields.find((f) => !allowed.fields!.includes(f));
        if (unknown !== undefined) throw this.err("unknown_field", at, `${name} has no field ${unknown}`);
      }
      const missing = allowed.fields.find((f) => !fields.includes(f));
      if (missing !== undefined) throw this.err("missing_field", at, `${name} needs field ${missing}`);
    }
    return allowed;
  }

  private fillObject(f: Frame): void {
    const shape = f.shape!;
    const obj = f.container;
    const values = f.values!;
    if (obj instanceof Placeholder) {
      obj.values = values;
      return;
    }
    if (shape.kind === "ATTRS") {
      setAttrs(shape, obj, values);
      return;
    }
    if (shape.kind !== "STATE") {
      // MUTABLE_SUBCLASS and the kinds made from their first value: all values at once.
      try {
        if (typeof obj.__setvalues__ === "function") obj.__setvalues__(values);
      } catch (e) {
        throw this.err("bad_state", f.at, `${shape.module}.${shape.qualname} refused its values: ${(e as Error).message}`);
      }
      return;
    }
    const state = values[0];
    try {
      if (typeof obj.__setstate__ === "function") obj.__setstate__(state);
      else if (state instanceof Map) for (const [k, v] of state) obj[String(k)] = v;
      else throw new Error("the default state must be a dict");
    } catch (e) {
      throw this.err("bad_state", f.at, `${shape.module}.${shape.qualname} refused its state: ${(e as Error).message}`);
    }
  }

  private buildObject(f: Frame): unknown {
    const shape = f.shape!;
    const values = f.values!;
    const allowed = shape.allowed;
    if (allowed === null) return new Placeholder(shape.module, shape.qualname, shape.kind, shape.fields, values);
    try {
      switch (shape.kind) {
        case "TUPLE_FIELDS": {
          if (allowed.decode) return allowed.decode(values);
          const obj = Object.create(allowed.cls?.prototype ?? Object.prototype);
          shape.fields!.forEach((name, i) => { obj[name] = values[i]; });
          return obj;
        }
        case "ENUM": {
          const member = allowed.decode ? allowed.decode(values[0]) : allowed.cls?.fromValue?.(values[0]);
          if (member === undefined) throw new Error(`no member has the value ${String(values[0])}`);
          return member;
        }
        case "CUSTOM":
          if (!allowed.decode) throw new Error("no decode function was given");
          return allowed.decode(values[0]);
        case "GLOBAL":
          // The allowed object itself; a name of the fixed tables stands as a placeholder.
          return allowed.cls ?? new Placeholder(shape.module, shape.qualname, shape.kind, shape.fields, values);
        default:
          throw new Error("only built-after kinds are built");
      }
    } catch (e) {
      throw this.err("bad_state", f.at, `${shape.module}.${shape.qualname} refused its values: ${(e as Error).message}`);
    }
  }
}


const NO_INPUT = new Uint8Array(0);
const NO_OPTIONS: ValueOptions = {};

/**
 * One decoder for every decode, reset for each: a small payload spent a third of its time
 * making a decoder and its frames, and, above all, V8's optimized decoder code holds the
 * decoder it was made with weakly; when a full GC found that one gone, all of that code was
 * thrown away, and every decode after a full GC ran slow until it was made again (measured:
 * twice the time of a record payload's decode). A decode started inside another (by a
 * class's decode function) makes a decoder of its own.
 */
let spareDecoder: BodyDecoder | null = new BodyDecoder(NO_INPUT, 0, 0, 0, NO_OPTIONS, 0, 0, 0);

/** Decodes one body (see BodyDecoder), with the shared decoder when it is free. */
export function decodeBody(buf: Uint8Array, start: number, end: number, errorBase: number, options: ValueOptions, spent: number, maxAlloc: number, hashBudget: number): unknown {
  const d = spareDecoder;
  if (d === null) return new BodyDecoder(buf, start, end, errorBase, options, spent, maxAlloc, hashBudget).decode();
  spareDecoder = null;
  d.init(buf, start, end, errorBase, options, spent, maxAlloc, hashBudget);
  try {
    return d.decode();
  } finally {
    d.release();
    spareDecoder = d;
  }
}

/** Gives an ATTRS instance its values as attributes named by the shape's fields: those the
 * allowed class declares (all when it declares none, or for a placeholder's plain record).
 * A field named __proto__ becomes an own property, never the prototype. */
function setAttrs(shape: Shape, obj: Record<string, unknown>, values: unknown[]): void {
  const fields = shape.fields!, declared = shape.allowed?.fields;
  for (let i = 0; i < fields.length; i++) {
    const name = fields[i];
    if (declared !== undefined && !declared.includes(name)) continue;
    if (name === "__proto__") Object.defineProperty(obj, name, { value: values[i], enumerable: true, writable: true, configurable: true });
    else obj[name] = values[i];
  }
}

/** The call of REDUCE_KW and NEWOBJ_KW: (arguments, keyword arguments), the keywords strs. */
function isCall(v: unknown): boolean {
  if (!(v instanceof Tuple) || v.length !== 2 || !(v[0] instanceof Tuple)) return false;
  const kw = v[1];
  if (kw instanceof Map) return kw.constructor === Map && [...kw.keys()].every((k) => typeof k === "string");
  if (typeof kw !== "object" || kw === null || (kw as Record<symbol, unknown>)[CLASS] !== undefined) return false;
  const proto = Object.getPrototypeOf(kw);
  return proto === Object.prototype || proto === null;
}

function describe(v: unknown): string {
  if (v instanceof Map) return "a dict";
  if (v instanceof Set) return "a set";
  if (Array.isArray(v)) return v instanceof Tuple ? "a tuple holding an unhashable value" : "a list";
  if (v instanceof ByteArray) return "a bytearray";
  return "an unhashable value";
}

export { keyProblem };
