// JS counterparts of tests/_vector_classes.py, the classes the OBJECT vectors name: the same
// names, kinds and declared fields, so that the allow-list checks (class_not_allowed,
// missing_field, unknown_field, bad_shape, bad_state) run against them.

import { Tuple, type AllowedClass } from "../src/index.js";

export class Point { x: unknown; y: unknown; }
export class Temperature {
  degrees: unknown;
  unit: unknown;
  __setstate__(state: unknown): void {
    if (!(state instanceof Tuple) || state.length !== 2) throw new TypeError("the state must be a (degrees, unit) tuple");
    [this.degrees, this.unit] = state;
  }
}
export class Color {
  private constructor(readonly name: string, readonly value: number) {}
  static readonly RED = new Color("RED", 1);
  static readonly GREEN = new Color("GREEN", 2);
  static fromValue(v: unknown): Color | undefined {
    return [Color.RED, Color.GREEN].find((m) => m.value === v);
  }
}
class Plain {}
/** The kinds of several values: the instance keeps them as they come. */
class Rebuilt {
  values: unknown[] = [];
  __setvalues__(values: unknown[]): void { this.values = values; }
}

const M = "_vector_classes";
export const VECTOR_CLASSES: AllowedClass[] = [
  { name: `${M}:Point`, kind: "ATTRS", cls: Point, fields: ["x", "y"] },
  { name: `${M}:Person`, kind: "ATTRS", cls: Plain, fields: ["name", "age", "email"] },
  { name: `${M}:Empty`, kind: "ATTRS", cls: Plain },
  { name: `${M}:Node`, kind: "ATTRS", cls: Plain },
  // __slots__ entries may stay unset, so no field is missing; none is unknown either.
  { name: `${M}:Slotted`, kind: "ATTRS", cls: Plain },
  { name: `${M}:Temperature`, kind: "STATE", cls: Temperature },
  { name: `${M}:Pair`, kind: "TUPLE_FIELDS", cls: Plain, fields: ["a", "b"] },
  { name: `${M}:Color`, kind: "ENUM", cls: Color },
  { name: `${M}:make_local.<locals>.Local`, kind: "ATTRS", cls: Plain },
  { name: `${M}:MyDict`, kind: "MUTABLE_SUBCLASS", cls: Rebuilt, base: "dict" },
  { name: `${M}:Tag`, kind: "VALUE_SUBCLASS", cls: Rebuilt, base: "str" },
  { name: `${M}:Box`, kind: "REDUCE", cls: Rebuilt },
  { name: `${M}:Fixed`, kind: "NEWOBJ", cls: Rebuilt },
  { name: `${M}:KwOnly`, kind: "NEWOBJ_KW", cls: Rebuilt },
  { name: `${M}:StructLike`, kind: "REDUCE_KW", cls: Rebuilt },
  { name: `${M}:AppError`, kind: "EXCEPTION", cls: Rebuilt },
];

export function vectorClasses(names: readonly string[]): AllowedClass[] {
  return names.map((n) => {
    const c = VECTOR_CLASSES.find((x) => x.name === n);
    if (!c) throw new Error(`no JS counterpart for ${n}`);
    return c;
  });
}
