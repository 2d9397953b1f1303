// zstd bodies (spec 12.3): exactly one frame, no dictionary, a recorded content size equal to
// the declared one, and a window no larger than the body needs. The frame is walked here to
// find its end; fzstd (streaming) does the decompression, into room for `size` bytes only.

import { Decompress } from "fzstd";
import { SizeMismatch } from "../envelope.js";

const MAGIC = [0x28, 0xb5, 0x2f, 0xfd];

class BadFrame extends Error {}
class Overflow extends Error {}
const MAX_SMALL_WINDOW = 8n << 20n;

/** Checks the frame layout; returns its recorded content size (or null) and window size. */
export function walkFrame(data: Uint8Array): { fcs: bigint | null; window: bigint } {
  for (let i = 0; i < 4; i++) if (data[i] !== MAGIC[i]) throw new BadFrame("it does not start with a zstd frame (28 B5 2F FD)");
  let pos = 4;
  const need = (n: number) => { if (pos + n > data.length) throw new BadFrame("the frame is cut short"); };
  need(1);
  const fhd = data[pos++];
  const fcsFlag = fhd >> 6, single = (fhd >> 5) & 1, reserved = (fhd >> 3) & 1, checksum = (fhd >> 2) & 1, dictFlag = fhd & 3;
  if (reserved) throw new BadFrame("the frame header sets a reserved bit");
  let window = 0n;
  if (!single) {
    need(1);
    const wd = data[pos++];
    const base = 1n << BigInt(10 + (wd >> 3));
    window = base + (base / 8n) * BigInt(wd & 7);
  }
  const dictSize = [0, 1, 2, 4][dictFlag];
  need(dictSize);
  let dictId = 0;
  for (let i = 0; i < dictSize; i++) dictId |= data[pos + i] << (8 * i);
  pos += dictSize;
  if (dictId !== 0) throw new BadFrame("the frame needs a dictionary");
  const fcsSize = fcsFlag === 0 ? (single ? 1 : 0) : [0, 2, 4, 8][fcsFlag];
  need(fcsSize);
  let fcs: bigint | null = null;
  if (fcsSize > 0) {
    fcs = 0n;
    for (let i = fcsSize - 1; i >= 0; i--) fcs = (fcs << 8n) | BigInt(data[pos + i]);
    if (fcsSize === 2) fcs += 256n;
    pos += fcsSize;
  }
  if (single) window = fcs!;
  for (;;) {
    need(3);
    const h = data[pos] | (data[pos + 1] << 8) | (data[pos + 2] << 16);
    pos += 3;
    const last = h & 1, type = (h >> 1) & 3, blockSize = h >>> 3;
    if (type === 3) throw new BadFrame("a block has the reserved type 3");
    const stored = type === 1 ? 1 : blockSize;
    need(stored);
    pos += stored;
    if (last) break;
  }
  if (checksum) { need(4); pos += 4; }
  if (pos !== data.length) throw new BadFrame(`${data.length - pos} bytes follow the zstd frame (exactly one frame is allowed)`);
  return { fcs, window };
}

export function zstdDecompress(data: Uint8Array, size: number): Uint8Array {
  const { fcs, window } = walkFrame(data);
  if (fcs !== null && fcs !== BigInt(size)) throw new SizeMismatch(`the zstd frame records ${fcs} bytes`);
  // The streaming decompressor keeps a window buffer, so the window bounds its memory. Spec
  // 12.3 lets a decoder refuse a window larger than the body needs; this one refuses only
  // windows above both that and 8 MiB (what zstd's usual levels use), so that a frame with a
  // modest window that makes more than declared is still found out as size_mismatch.
  let room = 1024n;
  while (room < BigInt(size)) room <<= 1n;
  if (room < MAX_SMALL_WINDOW) room = MAX_SMALL_WINDOW;
  if (window > room) throw new BadFrame(`its window of ${window} bytes exceeds what a body of ${size} bytes needs`);
  const out = new Uint8Array(size);
  let written = 0;
  const stream = new Decompress((chunk) => {
    // Stop as soon as the room is full: a bomb is not decompressed to its end.
    if (written + chunk.length > size) throw new Overflow();
    out.set(chunk, written);
    written += chunk.length;
  });
  try {
    stream.push(data, true);
  } catch (e) {
    if (e instanceof Overflow) throw new SizeMismatch("the data holds more bytes");
    throw e;
  }
  if (written !== size) throw new SizeMismatch(`the data holds ${written} bytes`);
  return out;
}
