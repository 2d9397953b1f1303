// zstd compression for envelopes (spec 12.3). There is no well-kept pure-JS zstd compressor,
// so two builds of the reference libzstd do it:
// - node:zlib's zstdCompressSync, where Node has it (22.15+, 23.8+): synchronous, native;
// - else @hpcc-js/wasm-zstd (Apache-2.0, part of the maintained hpcc-js-wasm project: one ES
//   module with the WASM inside, so it runs in Node 18+ and in browsers, bundled or from
//   file://). Its WASM is compiled asynchronously, once: `await initZstd()` before a
//   synchronous encode, or use encodeAsync, which loads it by itself. It is imported only
//   then, so code that never writes zstd (the viewer, lz4 users) does not carry it.
// Both compress in one shot with the body's size known, as the Rust encoder does: the frame
// records the content size and zstd fits the window to the body. Each frame is checked
// against spec 12.3 before it is used.

import { walkFrame } from "./zstd.js";

/** The zstd levels an encoder may ask for, and the one used when none is named (spec 12.3). */
export const MIN_ZSTD_LEVEL = 1;
export const MAX_ZSTD_LEVEL = 22;
export const DEFAULT_ZSTD_LEVEL = 3;

type NodeZlib = {
  zstdCompressSync?: (data: Uint8Array, options: { params: Record<number, number>; chunkSize: number; pledgedSrcSize?: number }) => Uint8Array;
  constants: { ZSTD_c_compressionLevel?: number };
};

interface WasmZstd {
  compress(data: Uint8Array, level: number): Uint8Array;
}

/** The largest body given to the WASM compressor. Its memory holds at most 2 GiB: the body,
 * room for the frame and zstd's tables (level 22 on 640 MiB fits; 1 GiB at level 3 does
 * not, and an instance that ran out is broken for good). node:zlib has no such limit. */
export const MAX_WASM_BODY = 512 << 20;

let nodeZlib: NodeZlib | null | undefined;
function getNodeZstd(): NodeZlib | null {
  if (nodeZlib === undefined) {
    const proc = (globalThis as { process?: { getBuiltinModule?: (name: string) => unknown } }).process;
    const zlib = (proc?.getBuiltinModule?.("node:zlib") as NodeZlib | undefined) ?? null;
    nodeZlib = zlib && typeof zlib.zstdCompressSync === "function" && zlib.constants.ZSTD_c_compressionLevel !== undefined ? zlib : null;
  }
  return nodeZlib;
}

let wasm: WasmZstd | null = null;
let loading: Promise<WasmZstd> | null = null;
let unload: (() => Promise<void>) | null = null;
let unloading: Promise<void> = Promise.resolve();
let backend: "auto" | "wasm" = "auto";

/** Which compressor a zstd envelope is written with now: "node:zlib", "wasm", or null when
 * neither is ready (then `await initZstd()` first). */
export function zstdCompressor(): "node:zlib" | "wasm" | null {
  if (backend === "auto" && getNodeZstd() !== null) return "node:zlib";
  return wasm !== null ? "wasm" : null;
}

/**
 * Makes `compress: "zstd"` available to the synchronous `encode`: loads the WebAssembly
 * compressor, unless node:zlib has zstd. Resolves once it is ready; calling it again is cheap.
 * encodeAsync calls it by itself.
 */
export async function initZstd(): Promise<void> {
  if (zstdCompressor() !== null) return;
  loading ??= unloading.then(() => import("@hpcc-js/wasm-zstd")).then(({ Zstd }) => ((unload = () => Zstd.unload()), Zstd.load())).then(
    (z) => (wasm = z),
    (e) => {
      loading = null;
      throw new Error(`cannot load the zstd compressor (@hpcc-js/wasm-zstd): ${(e as Error).message}`);
    },
  );
  await loading;
}

/** For the tests: write with the WASM compressor even where node:zlib has zstd. */
export function useZstdBackend(which: "auto" | "wasm"): void {
  backend = which;
}

/** The compressor to use; an error when none is ready. */
export function requireZstd(): "node:zlib" | "wasm" {
  const which = zstdCompressor();
  if (which === null) {
    throw new Error('compress: "zstd" needs the zstd compressor loaded: await initZstd() before encode, or use encodeAsync (node:zlib has zstd only from Node 22.15 and 23.8)');
  }
  return which;
}

/** Checks a level the caller gave (an integer in 1..22). */
export function checkZstdLevel(level: number): void {
  if (!Number.isInteger(level) || level < MIN_ZSTD_LEVEL || level > MAX_ZSTD_LEVEL) {
    throw new RangeError(`zstd level must be an integer between ${MIN_ZSTD_LEVEL} and ${MAX_ZSTD_LEVEL}, got ${String(level)}`);
  }
}

/** One zstd frame of `body` at `level`, as spec 12.3 wants it. */
export function zstdCompress(body: Uint8Array, level: number = DEFAULT_ZSTD_LEVEL): Uint8Array {
  checkZstdLevel(level);
  const which = requireZstd();
  let frame: Uint8Array;
  if (which === "node:zlib") {
    const zlib = getNodeZstd()!;
    // One call with the whole body and room for any result (chunkSize: ZSTD_compressBound)
    // takes libzstd's one-shot path, the same as ZSTD_compress (the same bytes, for the same
    // libzstd version): the content size recorded, the window fitted to the body. Smaller
    // output chunks would make it stream, which compresses worse at the same level.
    const n = body.length;
    const bound = n + (n >>> 8) + (n < 131072 ? (131072 - n) >>> 11 : 0);
    const out = zlib.zstdCompressSync!(body, {
      params: { [zlib.constants.ZSTD_c_compressionLevel!]: level },
      chunkSize: Math.max(64, bound),
      pledgedSrcSize: n,
    });
    frame = new Uint8Array(out.buffer, out.byteOffset, out.length);
  } else {
    if (body.length > MAX_WASM_BODY) {
      throw new RangeError(`a body of ${body.length} bytes is more than the WASM zstd compressor takes (${MAX_WASM_BODY}); use lz4, or Node 22.15+ (node:zlib)`);
    }
    try {
      frame = wasm!.compress(body, level);
    } catch (e) {
      // A WASM instance that failed may be left in any state: the next initZstd() makes a new one.
      wasm = null;
      loading = null;
      unloading = unload!().catch(() => {});
      throw new Error(`the WASM zstd compressor failed (${(e as Error).message}); it is unloaded, await initZstd() to load it again`);
    }
  }
  checkFrame(frame, body.length, which);
  return frame;
}

/** What spec 12.3 asks of the frame an encoder writes, and what the reference decoders check:
 * one frame, no dictionary, the content size recorded and equal to the body's, a window no
 * larger than the body's size rounded up to a power of two (at least 1 KiB). */
function checkFrame(frame: Uint8Array, size: number, which: string): void {
  let problem: string | null = null;
  try {
    const { fcs, window } = walkFrame(frame);
    let room = 1024n;
    while (room < BigInt(size)) room <<= 1n;
    if (fcs !== BigInt(size)) problem = fcs === null ? "it does not record the content size" : `it records ${fcs} bytes, not ${size}`;
    else if (window > room) problem = `its window of ${window} bytes exceeds ${room}`;
  } catch (e) {
    problem = (e as Error).message;
  }
  if (problem !== null) throw new Error(`the zstd compressor (${which}) wrote a frame spec 12.3 does not allow: ${problem}`);
}
