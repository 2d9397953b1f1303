// Short ASCII strings, the bulk of dict keys and small values: String.fromCharCode with the
// bytes as arguments makes one flat string with no intermediate array (measured fastest in
// V8 for up to 16 bytes); longer ones use Node's latin1Slice when there is one.

const fc = String.fromCharCode;
const latin1Slice = (globalThis as { Buffer?: { prototype: { latin1Slice?: (this: Uint8Array, s: number, e: number) => string } } }).Buffer?.prototype.latin1Slice;
const units: number[] = [];

/** The string of n bytes at p when all are ASCII, else null. */
export function asciiString(b: Uint8Array, p: number, n: number): string | null {
  // One test of all the bytes or-ed together: no branch per byte.
  let or = 0;
  for (let i = 0; i < n; i++) or |= b[p + i];
  if (or >= 0x80) return null;
  switch (n) {
    case 0: return "";
    case 1: return fc(b[p]);
    case 2: return fc(b[p], b[p + 1]);
    case 3: return fc(b[p], b[p + 1], b[p + 2]);
    case 4: return fc(b[p], b[p + 1], b[p + 2], b[p + 3]);
    case 5: return fc(b[p], b[p + 1], b[p + 2], b[p + 3], b[p + 4]);
    case 6: return fc(b[p], b[p + 1], b[p + 2], b[p + 3], b[p + 4], b[p + 5]);
    case 7: return fc(b[p], b[p + 1], b[p + 2], b[p + 3], b[p + 4], b[p + 5], b[p + 6]);
    case 8: return fc(b[p], b[p + 1], b[p + 2], b[p + 3], b[p + 4], b[p + 5], b[p + 6], b[p + 7]);
    case 9: return fc(b[p], b[p + 1], b[p + 2], b[p + 3], b[p + 4], b[p + 5], b[p + 6], b[p + 7], b[p + 8]);
    case 10: return fc(b[p], b[p + 1], b[p + 2], b[p + 3], b[p + 4], b[p + 5], b[p + 6], b[p + 7], b[p + 8], b[p + 9]);
    case 11: return fc(b[p], b[p + 1], b[p + 2], b[p + 3], b[p + 4], b[p + 5], b[p + 6], b[p + 7], b[p + 8], b[p + 9], b[p + 10]);
    case 12: return fc(b[p], b[p + 1], b[p + 2], b[p + 3], b[p + 4], b[p + 5], b[p + 6], b[p + 7], b[p + 8], b[p + 9], b[p + 10], b[p + 11]);
    case 13: return fc(b[p], b[p + 1], b[p + 2], b[p + 3], b[p + 4], b[p + 5], b[p + 6], b[p + 7], b[p + 8], b[p + 9], b[p + 10], b[p + 11], b[p + 12]);
    case 14: return fc(b[p], b[p + 1], b[p + 2], b[p + 3], b[p + 4], b[p + 5], b[p + 6], b[p + 7], b[p + 8], b[p + 9], b[p + 10], b[p + 11], b[p + 12], b[p + 13]);
    case 15: return fc(b[p], b[p + 1], b[p + 2], b[p + 3], b[p + 4], b[p + 5], b[p + 6], b[p + 7], b[p + 8], b[p + 9], b[p + 10], b[p + 11], b[p + 12], b[p + 13], b[p + 14]);
    case 16: return fc(b[p], b[p + 1], b[p + 2], b[p + 3], b[p + 4], b[p + 5], b[p + 6], b[p + 7], b[p + 8], b[p + 9], b[p + 10], b[p + 11], b[p + 12], b[p + 13], b[p + 14], b[p + 15]);
    default:
      if (latin1Slice !== undefined) return latin1Slice.call(b, p, p + n);
      units.length = n;
      for (let i = 0; i < n; i++) units[i] = b[p + i];
      return fc.apply(null, units);
  }
}
