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

const WINDOW_MIN = 512;
/** The most input text a decoded str can keep alive (see AsciiWindow). */
const WINDOW_MAX = 4096;
const WINDOW_START = WINDOW_MAX;

/** The latin1 text of some bytes: one character per byte (windows-1252 in a browser, which
 * differs from latin1 only above 0x7f, where no str is cut). */
let latin1Text: ((b: Uint8Array, s: number, e: number) => string) | null = null;
if (latin1Slice !== undefined) {
  latin1Text = (b, s, e) => latin1Slice.call(b, s, e);
} else {
  try {
    const td = new TextDecoder("latin1");
    latin1Text = (b, s, e) => td.decode(b.subarray(s, e));
  } catch {
    latin1Text = null; // no such decoder: every str is made on its own
  }
}

/** From this length a str is made on its own: one native call is small against its copy. */
const OWN_TEXT = 256;

/**
 * ASCII strs cut out of a window of the input decoded as latin1 text in one call. Making a
 * string costs a native call or a character-by-character build (50 to 300 ns for a URL); a
 * substring of a flat string takes about 10 ns. The window's bytes need no check: only spans
 * found ASCII are cut, and there latin1 is ASCII.
 *
 * A substring of 13 characters or more (V8's SlicedString::kMinLength) is a view that keeps
 * its whole window alive for as long as it lives, so the window's size is what one kept str
 * can hold of its payload: WINDOW_MAX, 4 KiB. Windows of up to 64 KiB kept 64 KiB per payload
 * for a caller keeping one small str of each. Making every str of 13 characters or more on
 * its own instead (latin1Slice, about 70 ns) measured 20 to 35% slower decodes of
 * github_issues, employees and rowset_1000, most of whose strs are 13 to 128 characters;
 * windows cost one native call per window of strs, and each byte is copied once. 4 KiB
 * windows decoded github_issues 5 to 7% faster than 2 KiB ones (dto_1000 and
 * product_catalog 0 to 4%), for twice what one kept str can hold. Strs of OWN_TEXT bytes
 * and more are made on their own and keep nothing.
 *
 * The window shrinks (to WINDOW_MIN) while each one serves few strs, so that a payload of
 * rare strs does not copy a whole window per str, and grows back while they are many.
 */
export class AsciiWindow {
  private text = "";
  private start = 0;
  private end = 0;
  private size = WINDOW_START;
  private served = 0;
  readonly enabled = latin1Text !== null;

  /** Forgets the input and the window (after a decode). */
  reset(): void {
    this.text = "";
    this.start = this.end = 0;
    this.size = WINDOW_START;
    this.served = 0;
  }

  /** The str of the ASCII bytes [s, e) of b, which ends at `limit` (the body's end). */
  slice(b: Uint8Array, s: number, e: number, limit: number): string {
    if (e - s >= OWN_TEXT) return latin1Text!(b, s, e);
    if (s < this.start || e > this.end) {
      let size = this.size;
      size = this.served >= 4 ? Math.min(WINDOW_MAX, size * 2) : Math.max(WINDOW_MIN, size >> 1);
      this.size = size;
      this.served = 0;
      this.start = s;
      this.end = Math.min(limit, Math.max(e, s + size));
      this.text = latin1Text!(b, s, this.end);
    }
    this.served++;
    return this.text.substring(s - this.start, e - this.start);
  }
}
