// NDARRAY and NUMPY_SCALAR (spec 5.16.3): a shape, a numpy dtype text and raw element bytes.
// The dtype's grammar and the data length are checked here; whether numpy accepts a
// structured dtype is for a numpy host to say (those vectors are python_only).

import { BlobReader, BlobWriter } from "./blob_reader.js";
import { ExtBlobValue, ExtCode } from "./base.js";

export const MAX_NDIM = 64;
const PLAIN_KINDS = "biufcmMSUV";

/** The item size of a plain dtype text, or null for a structured one. Throws on bad text. */
export function readDtype(r: BlobReader): { text: string; itemSize: number | bigint | null } {
  const n = r.varint("dtype length");
  const structured = r.peek() === 0x5b;
  const max = structured ? 4096 : 64;
  if (typeof n !== "number" || n < 1 || n > max) throw r.invalid(`dtype length ${n} is out of range 1..${max}`);
  const raw = r.take(n, "dtype");
  for (const c of raw) if (c < 0x20 || c > 0x7e) throw r.invalid("dtype is not printable ASCII");
  const text = String.fromCharCode(...raw);
  if (structured) return { text, itemSize: null };
  const m = /^([<>|])([A-Za-z])([0-9]*)(\[[A-Za-z0-9]+\])?$/.exec(text);
  if (!m) throw r.invalid(`dtype ${JSON.stringify(text)} is not a numpy dtype.str`);
  const kind = m[2];
  if (!PLAIN_KINDS.includes(kind)) throw r.invalid(`dtype ${JSON.stringify(text)} is not plain data (object and other dtypes are refused)`);
  const digits = m[3];
  if (digits === "" || (digits.length > 1 && digits[0] === "0")) throw r.invalid(`dtype ${JSON.stringify(text)} has no valid item size`);
  if (m[4] !== undefined && kind !== "m" && kind !== "M") throw r.invalid(`dtype ${JSON.stringify(text)} has a unit but is not a time kind`);
  let size = BigInt(digits);
  if (kind === "U") size *= 4n;
  if (size > 0xffffffffffffffffn) throw r.invalid(`dtype ${JSON.stringify(text)} has too large an item size`);
  return { text, itemSize: size <= 9007199254740991n ? Number(size) : size };
}

/** ndim, dims, dtype; and the data length they imply (null for a structured dtype). */
export function readHeader(r: BlobReader): { shape: (number | bigint)[]; dtype: string; dataLength: bigint | null } {
  const ndim = r.varint("ndim");
  if (typeof ndim !== "number" || ndim > MAX_NDIM) throw r.invalid(`ndim ${ndim} is above ${MAX_NDIM}`);
  const shape: (number | bigint)[] = [];
  let count = 1n;
  for (let i = 0; i < ndim; i++) {
    const d = r.varint("dimension");
    shape.push(d);
    count *= BigInt(d);
  }
  if (count > 0xffffffffffffffffn) throw r.invalid(`shape ${shape.join("x")} has more than 2^64 - 1 elements`);
  const dtype = readDtype(r);
  let dataLength: bigint | null = null;
  if (dtype.itemSize !== null) {
    dataLength = count * BigInt(dtype.itemSize);
    if (dataLength > 0xffffffffffffffffn) throw r.invalid("the data length overflows 2^64 - 1");
  }
  return { shape, dtype: dtype.text, dataLength };
}

export function writeHeader(w: BlobWriter, shape: readonly (number | bigint)[], dtype: string): void {
  w.varint(shape.length);
  for (const d of shape) w.varint(d);
  w.varint(dtype.length).raw(new TextEncoder().encode(dtype));
}

export class NDArray extends ExtBlobValue {
  readonly code = ExtCode.NDARRAY;
  /** `data`: the elements' raw bytes in C order (row-major), in the dtype's byte order. */
  constructor(readonly shape: readonly (number | bigint)[], readonly dtype: string, readonly data: Uint8Array, blob?: Uint8Array) {
    super(blob ?? (() => { const w = new BlobWriter(); writeHeader(w, shape, dtype); return w.raw(data).done(); })());
  }
  static parse(blob: Uint8Array): NDArray {
    const r = new BlobReader("NDARRAY", blob);
    const h = readHeader(r);
    const data = r.rest();
    if (h.dataLength !== null && h.dataLength !== BigInt(data.length)) {
      throw r.invalid(`data has ${data.length} bytes; the shape and item size need ${h.dataLength}`);
    }
    return new NDArray(h.shape, h.dtype, data, blob);
  }
}

export class NumpyScalar extends ExtBlobValue {
  readonly code = ExtCode.NUMPY_SCALAR;
  constructor(readonly dtype: string, readonly data: Uint8Array, blob?: Uint8Array) {
    super(blob ?? new BlobWriter().varint(dtype.length).raw(new TextEncoder().encode(dtype)).raw(data).done());
  }
  static parse(blob: Uint8Array): NumpyScalar {
    const r = new BlobReader("NUMPY_SCALAR", blob);
    const d = readDtype(r);
    const data = r.rest();
    if (d.itemSize !== null && BigInt(d.itemSize) !== BigInt(data.length)) {
      throw r.invalid(`data has ${data.length} bytes; its dtype's item size is ${d.itemSize}`);
    }
    return new NumpyScalar(d.text, data, blob);
  }
}
