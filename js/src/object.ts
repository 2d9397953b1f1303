// OBJECT shapes (spec 5.17): names, kinds, and how the allow-list turns a shape into JS values.

import { type ObjectKind, creationOf } from "./types.js";

const IDENT = /^[\p{XID_Start}_][\p{XID_Continue}]*$/u;

/** A module or qualified name: identifiers or `<locals>`, joined by single dots. */
export function isDottedName(s: string): boolean {
  for (const seg of s.split(".")) {
    if (seg !== "<locals>" && !IDENT.test(seg)) return false;
  }
  return true;
}

export const MAX_NAME = 1024;
export const MAX_FIELDS = 65535;

/** A class the caller allows (spec 5.17.4), under `module:qualname`. */
export interface AllowedClass {
  /** "module:qualname" as the payload names it. */
  name: string;
  /** The kind the class is written with; a shape of another kind is `bad_shape`. */
  kind: ObjectKind;
  /** ATTRS, STATE, TUPLE_FIELDS: instances are Object.create(cls.prototype), fields set as
   * properties (STATE: `__setstate__(state)` when the prototype has it, else the state dict's
   * str keys). ENUM: `cls.fromValue(value)` finds the member. */
  cls?: { prototype: object; fromValue?: (value: unknown) => unknown };
  /** CUSTOM (and optionally others): builds the value from the decoded state. */
  decode?: (state: unknown) => unknown;
  /** The fields the class declares, for unknown/missing field checks (ATTRS, TUPLE_FIELDS). */
  fields?: readonly string[];
  /** For the encoder: the state of an instance (CUSTOM, STATE); for the kinds of several
   * values (MUTABLE_SUBCLASS ... NEWOBJ_KW), the array of all of them. */
  encode?: (obj: object) => unknown;
  /** MUTABLE_SUBCLASS, VALUE_SUBCLASS: the builtin base (spec 5.17.3), such as "dict" or
   * "str"; a builtin value of another type is then `bad_state`. */
  base?: BuiltinBase;
}

/** The builtin bases of MUTABLE_SUBCLASS and VALUE_SUBCLASS, each with the value class its
 * builtin value must have exactly. */
export const BUILTIN_BASES = {
  list: "list", dict: "dict", set: "set", bytearray: "bytearray", deque: "DEQUE", OrderedDict: "ORDERED_DICT",
  Counter: "COUNTER", defaultdict: "DEFAULTDICT",
  str: "str", bytes: "bytes", int: "int", float: "float", complex: "complex", tuple: "tuple", frozenset: "frozenset",
  date: "DATE", time: "TIME", datetime: "DATETIME", timedelta: "TIMEDELTA", Decimal: "DECIMAL",
} as const;
export type BuiltinBase = keyof typeof BUILTIN_BASES;
const MUTABLE_BASES: readonly BuiltinBase[] = ["list", "dict", "set", "bytearray", "deque", "OrderedDict", "Counter", "defaultdict"];

/** Whether an allowed class's base suits its kind. */
export function baseFits(kind: ObjectKind, base: BuiltinBase): boolean {
  return (kind === "MUTABLE_SUBCLASS") === MUTABLE_BASES.includes(base);
}

export interface Shape {
  module: string;
  qualname: string;
  kind: ObjectKind;
  fields: string[] | null;
  /** The allowed class, or null for a placeholder. */
  allowed: AllowedClass | null;
  /** What a plain record carries under CLASS (one object per shape). */
  info: ClassInfo;
  /** Makes a plain record from the values (made on first use; null: not possible). */
  factory?: ((values: unknown[], info: ClassInfo) => object) | null;
  /** Reads the values and makes the plain record (made with the factory; see recordFactory). */
  read?: ((decoder: any, info: ClassInfo) => object) | null;
  /** The same for a row of an OBJECT_ROWS whose float columns are the fields marked in the
   * third argument (made with the factory). */
  readRow?: ((decoder: any, info: ClassInfo, columns: Uint8Array) => object) | null;
  /** A placeholder of ATTRS with fields (the fast path's OBJECT, see fastObject). */
  placeholderAttrs?: boolean;
}

/** The class of a plain record (decode option placeholders: "plain"). */
export interface ClassInfo {
  module: string;
  qualname: string;
  kind: ObjectKind;
  fields: readonly string[] | null;
}

/** How many values follow each instance of a shape (spec 5.17.3). */
export function valueCount(kind: ObjectKind, fields: readonly string[] | null): number {
  switch (kind) {
    case "ATTRS": case "TUPLE_FIELDS": return fields!.length;
    case "STATE": case "ENUM": case "CUSTOM": return 1;
    case "MUTABLE_SUBCLASS": case "VALUE_SUBCLASS": return 2;
    case "GLOBAL": return 0;
    case "REDUCE": case "NEWOBJ": case "REDUCE_KW": case "NEWOBJ_KW": return 4;
    case "EXCEPTION": return 5;
  }
}

export function createsFirst(kind: ObjectKind): boolean {
  return creationOf(kind) === "first";
}

/**
 * A decoded value as the value rules look at it (spec 5.17.3): its kind on the wire, whatever
 * form carried it. "None", "bool", "int", "float", "complex", "str", "bytes", "bytearray",
 * "list", "tuple", "dict", "set", "frozenset", "OBJECT", or an EXT code's name.
 */
export type ValueClass = string;

const CLASS_WORDS: Record<string, string> = {
  None: "None", bool: "a bool", int: "an int", float: "a float", complex: "a complex", str: "a str", bytes: "a bytes",
  bytearray: "a bytearray", list: "a list", tuple: "a tuple", dict: "a dict", set: "a set", frozenset: "a frozenset",
  OBJECT: "an OBJECT",
};
export const describeClass = (c: ValueClass): string => CLASS_WORDS[c] ?? c;

const MUTABLE_VALUES = new Set(["list", "dict", "set", "bytearray", "DEQUE", "ORDERED_DICT", "COUNTER", "DEFAULTDICT"]);
const IMMUTABLE_VALUES = new Set(["str", "bytes", "int", "float", "complex", "tuple", "frozenset", "DATE", "TIME", "DATETIME", "TIMEDELTA", "DECIMAL"]);

/** The value rules of spec 5.17.3 for value `index` of an OBJECT of `kind`: null when the
 * value may stand there, else the message of the `bad_state`. */
export function valueRule(kind: ObjectKind, index: number, c: ValueClass): string | null {
  let ok = true;
  let expected = "";
  switch (kind) {
    case "MUTABLE_SUBCLASS":
      if (index === 0) { ok = MUTABLE_VALUES.has(c); expected = "a list, dict, set, bytearray, DEQUE, ORDERED_DICT, COUNTER or DEFAULTDICT"; }
      break;
    case "VALUE_SUBCLASS":
      if (index === 0) { ok = IMMUTABLE_VALUES.has(c); expected = "a str, bytes, int, float, complex, tuple, frozenset, DATE, TIME, DATETIME, TIMEDELTA or DECIMAL"; }
      break;
    case "REDUCE": case "NEWOBJ": case "REDUCE_KW": case "NEWOBJ_KW":
      if (index === 0) {
        ok = c === "tuple";
        expected = kind.endsWith("_KW") ? "a tuple of the arguments and the keyword arguments" : "a tuple of arguments";
      } else if (index === 2) { ok = c === "None" || c === "list"; expected = "None or a list of items"; }
      else if (index === 3) { ok = c === "None" || c === "dict"; expected = "None or a dict of items"; }
      break;
    case "EXCEPTION":
      if (index === 0) { ok = c === "tuple"; expected = "a tuple of arguments"; }
      else if (index === 1) { ok = c === "None" || c === "dict"; expected = "None or a dict of attributes"; }
      else if (index === 2 || index === 3) { ok = c === "None" || c === "OBJECT"; expected = "None or an exception"; }
      else if (index === 4) { ok = c === "bool"; expected = "a bool"; }
      break;
    default:
      break;
  }
  return ok ? null : `${kind} value ${index} must be ${expected}, not ${describeClass(c)}`;
}

/** Whether a kind has value rules at all (only these pay for classifying their values). */
export function hasValueRules(kind: ObjectKind): boolean {
  return kind !== "ATTRS" && kind !== "STATE" && kind !== "TUPLE_FIELDS" && kind !== "ENUM" && kind !== "CUSTOM" && kind !== "GLOBAL";
}

/** The fixed table of builtin exceptions (spec 5.17.4): module `builtins`, kinds EXCEPTION
 * and GLOBAL, allowed without being listed. */
export const BUILTIN_EXCEPTIONS: ReadonlySet<string> = new Set([
  "ArithmeticError", "AssertionError", "AttributeError", "BaseException", "BaseExceptionGroup", "BlockingIOError",
  "BrokenPipeError", "BufferError", "BytesWarning", "ChildProcessError", "ConnectionAbortedError", "ConnectionError",
  "ConnectionRefusedError", "ConnectionResetError", "DeprecationWarning", "EOFError", "EncodingWarning", "Exception",
  "ExceptionGroup", "FileExistsError", "FileNotFoundError", "FloatingPointError", "FutureWarning", "GeneratorExit",
  "ImportError", "ImportWarning", "IndentationError", "IndexError", "InterruptedError", "IsADirectoryError", "KeyError",
  "KeyboardInterrupt", "LookupError", "MemoryError", "ModuleNotFoundError", "NameError", "NotADirectoryError",
  "NotImplementedError", "OSError", "OverflowError", "PendingDeprecationWarning", "PermissionError",
  "ProcessLookupError", "PythonFinalizationError", "RecursionError", "ReferenceError", "ResourceWarning",
  "RuntimeError", "RuntimeWarning", "StopAsyncIteration", "StopIteration", "SyntaxError", "SyntaxWarning",
  "SystemError", "SystemExit", "TabError", "TimeoutError", "TypeError", "UnboundLocalError", "UnicodeDecodeError",
  "UnicodeEncodeError", "UnicodeError", "UnicodeTranslateError", "UnicodeWarning", "UserWarning", "ValueError",
  "Warning", "ZeroDivisionError",
]);

/** The fixed table of builtin types (spec 5.17.4): module `builtins`, kind GLOBAL only. */
export const BUILTIN_TYPES: ReadonlySet<string> = new Set([
  "bool", "bytearray", "bytes", "complex", "dict", "float", "frozenset", "int", "list", "object", "range", "set",
  "slice", "str", "tuple", "type",
]);

/** Whether a shape names a class of the two fixed tables, for a kind the table allows. */
export function inFixedTables(module: string, qualname: string, kind: ObjectKind): boolean {
  if (module !== "builtins") return false;
  if (kind === "EXCEPTION") return BUILTIN_EXCEPTIONS.has(qualname);
  if (kind === "GLOBAL") return BUILTIN_EXCEPTIONS.has(qualname) || BUILTIN_TYPES.has(qualname);
  return false;
}
