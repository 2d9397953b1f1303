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

const WINDOW_MIN = 1024;
const WINDOW_MAX = 65536;
const WINDOW_START = 4096;

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

/** V8's SlicedString::kMinLength: a substring at least this long is a view that keeps its
 * whole parent string alive; a shorter one is a copy. */
const SLICED_MIN = 13;
/** The most input text a decoded str can keep alive (see AsciiWindow). */
const SLICED_WINDOW = 2048;
/** From this length a str is made on its own: one native call is small against its copy. */
const OWN_TEXT = 256;

/**
 * ASCII strs cut out of windows of the input decoded as latin1 text in one call. Making a
 * string costs a native call or a character-by-character build (50 to 300 ns for a URL); a
 * substring of a flat string takes about 10 ns. The window's bytes need no check: only spans
 * found ASCII are cut, and there latin1 is ASCII.
 *
 * A substring shorter than SLICED_MIN is a copy, so short strs come from one large window
 * (up to WINDOW_MAX bytes), which grows while each one serves several strs and shrinks while
 * it serves few, so that a payload of rare strs does not copy a window per str.
 *
 * A longer substring is a sliced string that keeps its whole window alive for as long as it
 * lives: cut from the large window, one 20-character str kept from each payload would keep
 * 64 KiB of it. Making each such str on its own (latin1Slice, 70 ns) measured 20 to 35%
 * slower decodes of github_issues, employees and rowset_1000, most of whose strs are 13 to
 * 128 characters; so they are cut from a window of their own of SLICED_WINDOW bytes, which
 * bounds what any one str keeps alive to 2 KiB of text, at a few per cent of decode time.
 * Strs of OWN_TEXT bytes and more are made on their own and keep nothing.
 */
export class AsciiWindow {
  private text = "";
  private start = 0;
  private end = 0;
  private size = WINDOW_START;
  private served = 0;
  /** The window of the strs of SLICED_MIN to OWN_TEXT bytes. */
  private longText = "";
  private longStart = 0;
  private longEnd = 0;
  readonly enabled = latin1Text !== null;

  /** Forgets the input and the window (after a decode). */
  reset(): void {
    this.text = "";
    this.start = this.end = 0;
    this.size = WINDOW_START;
    this.served = 0;
    this.longText = "";
    this.longStart = this.longEnd = 0;
  }

  /** The str of the ASCII bytes [s, e) of b, which ends at `limit` (the body's end). */
  slice(b: Uint8Array, s: number, e: number, limit: number): string {
    const n = e - s;
    if (n >= SLICED_MIN) {
      if (n >= OWN_TEXT) return latin1Text!(b, s, e);
      if (s < this.longStart || e > this.longEnd) {
        this.longStart = s;
        this.longEnd = Math.min(limit, Math.max(e, s + SLICED_WINDOW));
        this.longText = latin1Text!(b, s, this.longEnd);
      }
      return this.longText.substring(s - this.longStart, e - this.longStart);
    }
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
