// ARRAY (spec 5.16.3): Python's array.array, a type code and little-endian items of the wire
// item size. `items()` gives them as a typed array (or code points for 'u' and 'w').

import { BlobReader } from "./blob_reader.js";
import { ExtBlobValue, ExtCode } from "./base.js";

export const ARRAY_ITEM_SIZES: Readonly<Record<string, number>> = {
  b: 1, B: 1, h: 2, H: 2, i: 4, I: 4, f: 4, u: 4, w: 4, l: 8, L: 8, q: 8, Q: 8, d: 8,
};

export function arrayItemSize(typecode: number): number | undefined {
  return ARRAY_ITEM_SIZES[String.fromCharCode(typecode)];
}

export class PyArray extends ExtBlobValue {
  readonly code = ExtCode.ARRAY;
  /** `data`: the items' little-endian bytes. */
  constructor(readonly typecode: string, readonly data: Uint8Array, blob?: Uint8Array) {
    super(blob ?? (() => {
      const size = ARRAY_ITEM_SIZES[typecode];
      if (size === undefined || typecode.length !== 1) throw new RangeError(`array typecode ${typecode} is not defined`);
      if (data.length % size !== 0) throw new RangeError("array data is not a whole number of items");
      const b = new Uint8Array(1 + data.length);
      b[0] = typecode.charCodeAt(0);
      b.set(data, 1);
      return b;
    })());
  }
  static parse(blob: Uint8Array): PyArray {
    const r = new BlobReader("ARRAY", blob);
    const tc = r.u8("typecode");
    const size = arrayItemSize(tc);
    if (size === undefined) throw r.invalid(`typecode ${JSON.stringify(String.fromCharCode(tc))} is not defined`);
    const data = r.rest();
    if (data.length % size !== 0) throw r.invalid(`${data.length} bytes of data is not a multiple of the item size ${size}`);
    return new PyArray(String.fromCharCode(tc), data, blob);
  }
  /** The items, as a typed array of the type code's kind (a copy, little-endian read). */
  items(): ArrayLike<number | bigint> {
    const dv = new DataView(this.data.buffer, this.data.byteOffset, this.data.byteLength);
    const size = ARRAY_ITEM_SIZES[this.typecode];
    const n = this.data.length / size;
    const out: (number | bigint)[] = [];
    for (let i = 0; i < n; i++) {
      const o = i * size;
      switch (this.typecode) {
        case "b": out.push(dv.getInt8(o)); break;
        case "B": out.push(dv.getUint8(o)); break;
        case "h": out.push(dv.getInt16(o, true)); break;
        case "H": out.push(dv.getUint16(o, true)); break;
        case "i": out.push(dv.getInt32(o, true)); break;
        case "I": case "u": case "w": out.push(dv.getUint32(o, true)); break;
        case "f": out.push(dv.getFloat32(o, true)); break;
        case "d": out.push(dv.getFloat64(o, true)); break;
        case "l": case "q": out.push(dv.getBigInt64(o, true)); break;
        case "L": case "Q": out.push(dv.getBigUint64(o, true)); break;
      }
    }
    return out;
  }
}
