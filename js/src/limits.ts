// The allocation estimate (spec 8.3). The per-object costs follow the reference decoder's
// table (CPython 3.11 sizes on 64-bit builds, erring high); the spec fixes only that every
// object costs at least 16 bytes, so the budget means the same in every implementation.

export const DEFAULT_ALLOC_PER_INPUT_BYTE = 256;
export const DEFAULT_ALLOC_BASE = 1 << 20;
/** Ints that cost nothing: those the format has no identity for (and CPython caches). */
export const SMALL_INT_MIN = -16;
export const SMALL_INT_MAX = 63;

export function defaultAllocBudget(inputLength: number): number {
  return inputLength * DEFAULT_ALLOC_PER_INPUT_BYTE + DEFAULT_ALLOC_BASE;
}

export const cost = {
  SCALAR: 32,
  str: (n: number) => 80 + 4 * n,
  bytes: (n: number) => 40 + n,
  bytearray: (n: number) => 64 + n,
  bigint: (n: number) => 40 + 2 * n,
  list: (n: number) => 72 + 8 * n,
  packedFloatList: (n: number) => 72 + 8 * n + 32 * n,
  tuple: (n: number) => 56 + 8 * n,
  tupleList: (rows: number, arity: number) => (rows === 0 ? 72 : 72 + 8 * rows + rows * (56 + 8 * arity)),
  records: (rows: number, width: number) => 72 + 8 * rows + rows * (240 + 48 * width),
  /** What the LIST of the same OBJECTs costs, with the floats of the columns (spec 8.3). */
  objectRows: (rows: number, width: number, columns: number) => 72 + 8 * rows + rows * (160 + 56 * width + 32 * columns),
  dict: (n: number) => 240 + 48 * n,
  set: (n: number) => 232 + 48 * n,
  extBlob: (n: number) => 96 + 4 * n,
  object: (n: number) => 160 + 56 * n,
  shape: (n: number) => 128 + 8 * n,
} as const;
