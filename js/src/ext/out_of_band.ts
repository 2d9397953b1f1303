// OUT_OF_BAND (spec 5.16.6): a value whose data is a buffer passed next to the payload.

import { BlobReader, BlobWriter } from "./blob_reader.js";
import { arrayItemSize } from "./array.js";
import { readHeader, writeHeader } from "./ndarray.js";

export const OOB_THRESHOLD = 1 << 20;

export type OutOfBandLayout =
  | { kind: 0 | 1; index: number | bigint; length: number | bigint }
  | { kind: 2; index: number | bigint; length: number | bigint; typecode: string }
  | { kind: 3 | 4; index: number | bigint; length: number | bigint; shape: (number | bigint)[]; dtype: string };

export function parseOutOfBand(blob: Uint8Array): OutOfBandLayout {
  const r = new BlobReader("OUT_OF_BAND", blob);
  const index = r.varint("index");
  const length = r.varint("length");
  const kind = r.u8("kind");
  switch (kind) {
    case 0:
    case 1:
      r.end();
      return { kind, index, length };
    case 2: {
      const tc = r.u8("typecode");
      const size = arrayItemSize(tc);
      if (size === undefined) throw r.invalid(`array typecode ${JSON.stringify(String.fromCharCode(tc))} is not defined`);
      r.end();
      if (BigInt(length) % BigInt(size) !== 0n) throw r.invalid(`length ${length} is not a multiple of the item size ${size}`);
      return { kind, index, length, typecode: String.fromCharCode(tc) };
    }
    case 3:
    case 4: {
      const h = readHeader(r);
      r.end();
      if (h.dataLength !== null && h.dataLength !== BigInt(length)) {
        throw r.invalid(`length ${length}; the shape and item size need ${h.dataLength}`);
      }
      return { kind, index, length, shape: h.shape, dtype: h.dtype };
    }
    default:
      throw r.invalid(`kind ${kind} is not defined (0..4)`);
  }
}

export function outOfBandBlob(layout: OutOfBandLayout): Uint8Array {
  const w = new BlobWriter().varint(layout.index).varint(layout.length).u8(layout.kind);
  switch (layout.kind) {
    case 0: case 1: break;
    case 2: w.u8(layout.typecode.charCodeAt(0)); break;
    case 3: case 4: writeHeader(w, layout.shape, layout.dtype); break;
  }
  return w.done();
}

/** Reorders the elements of a Fortran-order buffer into C order. */
export function fortranToC(data: Uint8Array, shape: readonly (number | bigint)[], itemSize: number): Uint8Array {
  const dims = shape.map(Number);
  const n = dims.reduce((a, b) => a * b, 1);
  const out = new Uint8Array(data.length);
  const idx = new Array(dims.length).fill(0);
  for (let c = 0; c < n; c++) {
    // c walks C order; compute the Fortran position of the same index.
    let f = 0, stride = 1;
    for (let d = 0; d < dims.length; d++) { f += idx[d] * stride; stride *= dims[d]; }
    out.set(data.subarray(f * itemSize, (f + 1) * itemSize), c * itemSize);
    for (let d = dims.length - 1; d >= 0; d--) { if (++idx[d] < dims[d]) break; idx[d] = 0; }
  }
  return out;
}
