// LZ4 block bodies (spec 12.3): one block, no frame, no size prefix. Decoded here into room for
// exactly `size` bytes, so that a block that would make more stops when the room is full: a
// bounded decoder is short enough to own (the npm lz4 decoders write into a caller's buffer
// without telling when it would overflow). lz4js compresses (encode.ts).

import { SizeMismatch } from "../envelope.js";

class BadBlock extends Error {}

export function lz4Decompress(src: Uint8Array, size: number): Uint8Array {
  const out = new Uint8Array(size);
  let s = 0, d = 0;
  const n = src.length;
  for (;;) {
    if (s >= n) throw new BadBlock("the block ends before a sequence");
    const token = src[s++];
    let lit = token >> 4;
    if (lit === 15) {
      let b: number;
      do {
        if (s >= n) throw new BadBlock("a literal length runs past the end");
        b = src[s++];
        lit += b;
      } while (b === 255);
    }
    if (s + lit > n) throw new BadBlock("literals run past the end of the block");
    if (d + lit > size) throw new SizeMismatch("the data holds more bytes");
    out.set(src.subarray(s, s + lit), d);
    s += lit;
    d += lit;
    if (s === n) break; // the last sequence has literals only
    if (s + 2 > n) throw new BadBlock("a match offset runs past the end");
    const offset = src[s] | (src[s + 1] << 8);
    s += 2;
    if (offset === 0) throw new BadBlock("a match offset is 0");
    if (offset > d) throw new BadBlock("a match reaches before the start of the output");
    let len = token & 15;
    if (len === 15) {
      let b: number;
      do {
        if (s >= n) throw new BadBlock("a match length runs past the end");
        b = src[s++];
        len += b;
      } while (b === 255);
    }
    len += 4;
    if (d + len > size) throw new SizeMismatch("the data holds more bytes");
    for (let i = 0; i < len; i++, d++) out[d] = out[d - offset];
  }
  if (d !== size) throw new SizeMismatch(`the data holds ${d} bytes`);
  return out;
}
