// Strict UTF-8 (spec 5.7) and UTF-8 with surrogates (spec 5.8). Short strings are decoded by
// hand (a TextDecoder call costs more than the loop for them); long ones by a fatal
// TextDecoder, which rejects exactly what strict UTF-8 rejects. ignoreBOM keeps a leading
// U+FEFF as the character it is.

const fatalDecoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });
const encoder = new TextEncoder();
const SHORT = 48;

const utf8Slice = (globalThis as { Buffer?: { prototype: { utf8Slice?: (this: Uint8Array, s: number, e: number) => string } } }).Buffer?.prototype.utf8Slice;

/** Decodes strict UTF-8, or returns null when the bytes are not strict UTF-8. */
export function decodeUtf8(buf: Uint8Array, start: number, end: number): string | null {
  if (utf8Slice !== undefined) {
    // Node: the native slice makes the string, replacing every ill-formed sequence by at
    // least one U+FFFD; valid input makes a U+FFFD only where it holds one. So a string
    // without one was valid, and only one with one needs the strict check (in JS, a byte at
    // a time: most of the time of a long str).
    const s = utf8Slice.call(buf, start, end);
    if (s.indexOf("\uFFFD") === -1) return s;
    return isStrictUtf8(buf, start, end) ? s : null;
  }
  if (end - start > SHORT) {
    try {
      return fatalDecoder.decode(buf.subarray(start, end));
    } catch {
      return null;
    }
  }
  return decodeByHand(buf, start, end, false);
}

/** Whether the bytes are strict UTF-8 (shortest forms, no surrogates, at most U+10FFFF). */
export function isStrictUtf8(buf: Uint8Array, pos: number, end: number): boolean {
  while (pos < end) {
    const b0 = buf[pos];
    if (b0 < 0x80) { pos++; continue; }
    if (b0 >= 0xc2 && b0 <= 0xdf) {
      if (pos + 1 >= end || (buf[pos + 1] & 0xc0) !== 0x80) return false;
      pos += 2;
    } else if (b0 >= 0xe0 && b0 <= 0xef) {
      if (pos + 2 >= end) return false;
      const b1 = buf[pos + 1];
      if ((b1 & 0xc0) !== 0x80 || (buf[pos + 2] & 0xc0) !== 0x80) return false;
      if (b0 === 0xe0 && b1 < 0xa0) return false; // overlong
      if (b0 === 0xed && b1 >= 0xa0) return false; // surrogate
      pos += 3;
    } else if (b0 >= 0xf0 && b0 <= 0xf4) {
      if (pos + 3 >= end) return false;
      const b1 = buf[pos + 1];
      if ((b1 & 0xc0) !== 0x80 || (buf[pos + 2] & 0xc0) !== 0x80 || (buf[pos + 3] & 0xc0) !== 0x80) return false;
      if (b0 === 0xf0 && b1 < 0x90) return false; // overlong
      if (b0 === 0xf4 && b1 >= 0x90) return false; // above U+10FFFF
      pos += 4;
    } else {
      return false;
    }
  }
  return true;
}

/** Decodes UTF-8 in which lone surrogate code points (ED A0 80..ED BF BF) are allowed. */
export function decodeUtf8Surrogates(buf: Uint8Array, start: number, end: number): string | null {
  return decodeByHand(buf, start, end, true);
}

function decodeByHand(buf: Uint8Array, pos: number, end: number, surrogates: boolean): string | null {
  let out = "";
  const units: number[] = [];
  while (pos < end) {
    const b0 = buf[pos];
    if (b0 < 0x80) {
      units.push(b0);
      pos++;
    } else if (b0 >= 0xc2 && b0 <= 0xdf) {
      if (pos + 1 >= end) return null;
      const b1 = buf[pos + 1];
      if ((b1 & 0xc0) !== 0x80) return null;
      units.push(((b0 & 0x1f) << 6) | (b1 & 0x3f));
      pos += 2;
    } else if (b0 >= 0xe0 && b0 <= 0xef) {
      if (pos + 2 >= end) return null;
      const b1 = buf[pos + 1], b2 = buf[pos + 2];
      if ((b1 & 0xc0) !== 0x80 || (b2 & 0xc0) !== 0x80) return null;
      const cp = ((b0 & 0x0f) << 12) | ((b1 & 0x3f) << 6) | (b2 & 0x3f);
      if (cp < 0x800) return null;
      if (cp >= 0xd800 && cp <= 0xdfff && !surrogates) return null;
      units.push(cp);
      pos += 3;
    } else if (b0 >= 0xf0 && b0 <= 0xf4) {
      if (pos + 3 >= end) return null;
      const b1 = buf[pos + 1], b2 = buf[pos + 2], b3 = buf[pos + 3];
      if ((b1 & 0xc0) !== 0x80 || (b2 & 0xc0) !== 0x80 || (b3 & 0xc0) !== 0x80) return null;
      const cp = ((b0 & 0x07) << 18) | ((b1 & 0x3f) << 12) | ((b2 & 0x3f) << 6) | (b3 & 0x3f);
      if (cp < 0x10000 || cp > 0x10ffff) return null;
      const c = cp - 0x10000;
      units.push(0xd800 | (c >> 10), 0xdc00 | (c & 0x3ff));
      pos += 4;
    } else {
      return null;
    }
    if (units.length > 4096) {
      out += String.fromCharCode.apply(null, units);
      units.length = 0;
    }
  }
  return out + String.fromCharCode.apply(null, units);
}

/** A high surrogate not followed by a low one, or a low one not preceded by a high one. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Whether the engine has String.prototype.isWellFormed (Node 20+, current browsers); the
 * package supports Node 18, which has not, and there the expression above answers. */
const hasIsWellFormed = typeof (String.prototype as { isWellFormed?: unknown }).isWellFormed === "function";

/** True when the string holds a lone surrogate (and so needs STR_SURROGATES). */
export function hasLoneSurrogate(s: string): boolean {
  if (hasIsWellFormed) return !(s as string & { isWellFormed(): boolean }).isWellFormed();
  return LONE_SURROGATE.test(s);
}

/** The Node 18 answer of hasLoneSurrogate, for the test that holds it to isWellFormed. */
export function hasLoneSurrogateByPattern(s: string): boolean {
  return LONE_SURROGATE.test(s);
}

/** Strict UTF-8 bytes of a well-formed string. */
export function encodeUtf8(s: string): Uint8Array {
  return encoder.encode(s);
}

/** UTF-8 bytes of any string, lone surrogates written as their 3-byte forms (surrogatepass). */
export function encodeUtf8Surrogates(s: string): Uint8Array {
  const out: number[] = [];
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        i++;
      }
    }
    if (c < 0x80) out.push(c);
    else if (c < 0x800) out.push(0xc0 | (c >> 6), 0x80 | (c & 0x3f));
    else if (c < 0x10000) out.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f));
    else out.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 0x3f), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f));
  }
  return Uint8Array.from(out);
}

/** Writes a well-formed string's UTF-8 into `buf` at `pos`; returns bytes written. `buf` must
 * have room for 3 bytes per UTF-16 unit. */
export function writeUtf8(s: string, buf: Uint8Array, pos: number): number {
  const n = s.length;
  if (n < 32) {
    let p = pos;
    for (let i = 0; i < n; i++) {
      let c = s.charCodeAt(i);
      if (c < 0x80) { buf[p++] = c; continue; }
      if (c < 0x800) { buf[p++] = 0xc0 | (c >> 6); buf[p++] = 0x80 | (c & 0x3f); continue; }
      if (c >= 0xd800 && c <= 0xdbff) {
        const d = s.charCodeAt(++i);
        c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        buf[p++] = 0xf0 | (c >> 18); buf[p++] = 0x80 | ((c >> 12) & 0x3f);
        buf[p++] = 0x80 | ((c >> 6) & 0x3f); buf[p++] = 0x80 | (c & 0x3f);
        continue;
      }
      buf[p++] = 0xe0 | (c >> 12); buf[p++] = 0x80 | ((c >> 6) & 0x3f); buf[p++] = 0x80 | (c & 0x3f);
    }
    return p - pos;
  }
  return encoder.encodeInto(s, buf.subarray(pos)).written;
}
