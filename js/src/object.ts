// OBJECT shapes (spec 5.17): names, kinds, and how the allow-list turns a shape into JS values.

import type { ObjectKind } from "./types.js";

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
  /** For the encoder: the state of an instance (CUSTOM, STATE). */
  encode?: (obj: object) => unknown;
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
  factory?: ((values: unknown[]) => object) | null;
}

/** The class of a plain record (decode option placeholders: "plain"). */
export interface ClassInfo {
  module: string;
  qualname: string;
  kind: ObjectKind;
  fields: readonly string[] | null;
}

export function valueCount(kind: ObjectKind, fields: readonly string[] | null): number {
  return kind === "ATTRS" || kind === "TUPLE_FIELDS" ? fields!.length : 1;
}

export function createsFirst(kind: ObjectKind): boolean {
  return kind === "ATTRS" || kind === "STATE";
}
