// Streams of payloads (spec 11): `ab 53 01`, frames of a minimal varint length and one payload,
// then the end marker `00`. Each payload is decoded on its own; errors carry the stream offset
// and the message index.

import { decodeError, DecodeError } from "./errors.js";
import { VarintReader } from "./varint.js";
import { decode, type DecodeOptions } from "./api.js";

export interface StreamOptions extends DecodeOptions {
  /** A stream that ends at a frame boundary without its end marker is truncated (default true). */
  requireEnd?: boolean;
  /** Largest accepted payload length (default 2^31). */
  maxMessage?: number;
  /** Decode the payloads (default true); false gives the raw payloads. */
  decodePayloads?: boolean;
}

export interface StreamMessage {
  index: number;
  /** Stream offset of the payload's first byte. */
  offset: number;
  payload: Uint8Array;
  value?: unknown;
}

const DEFAULT_MAX_MESSAGE = 2 ** 31;

function fail(e: DecodeError, index: number): never {
  e.messageIndex = index;
  throw e;
}

/** Reads a whole stream held in memory; returns its messages or throws the first error. */
export function readStream(data: Uint8Array, options: StreamOptions = {}): StreamMessage[] {
  const reader = new StreamReader(options);
  reader.push(data);
  return [...reader.messages(), ...reader.end()];
}

/** A stream reader fed in pieces (a socket, a pipe); it never allocates for a declared length
 * before the payload's bytes are there. */
export class StreamReader {
  private buf = new Uint8Array(0);
  /** Stream offset of buf[0]. */
  private base = 0;
  private pos = 0;
  private index = 0;
  private headerDone = false;
  private finished = false;
  private ready: StreamMessage[] = [];
  private vr = new VarintReader();
  private readonly maxMessage: number;

  constructor(private readonly options: StreamOptions = {}) {
    this.maxMessage = options.maxMessage ?? DEFAULT_MAX_MESSAGE;
  }

  /** Adds bytes; complete messages become available from messages(). */
  push(chunk: Uint8Array): void {
    const rest = this.buf.subarray(this.pos);
    const merged = new Uint8Array(rest.length + chunk.length);
    merged.set(rest);
    merged.set(chunk, rest.length);
    this.base += this.pos;
    this.buf = merged;
    this.pos = 0;
    this.scan(false);
  }

  /** The messages complete so far. */
  *messages(): Iterable<StreamMessage> {
    while (this.ready.length) yield this.ready.shift()!;
  }

  /** The input has ended: reports a missing end marker or a cut frame; returns what is left. */
  end(): StreamMessage[] {
    this.scan(true);
    return this.ready.splice(0);
  }

  private scan(atEnd: boolean): void {
    const buf = this.buf;
    if (!this.headerDone) {
      const n = buf.length;
      const magic = [0xab, 0x53];
      for (let i = 0; i < Math.min(n, 2); i++) if (buf[i] !== magic[i]) fail(decodeError("bad_magic", 0, "not an amber stream"), 0);
      if (n >= 3 && buf[2] !== 1) fail(decodeError("unsupported_version", 2, `stream version ${buf[2]}`), 0);
      if (n < 3) {
        if (atEnd) fail(decodeError("truncated", n), 0);
        return;
      }
      this.headerDone = true;
      this.pos = 3;
    }
    while (!this.finished) {
      const F = this.pos;
      const at = this.base + F;
      if (F >= buf.length) {
        if (!atEnd) return;
        if (this.options.requireEnd === false) { this.finished = true; return; }
        fail(decodeError("truncated", at, "the stream ends without its end marker"), this.index);
      }
      if (!this.vr.read(buf, F, buf.length)) {
        if (this.vr.failure === 1 && !atEnd) return;
        try { this.vr.throwAt(at); } catch (e) { fail(e as DecodeError, this.index); }
      }
      const L = this.vr.exact;
      const P = this.vr.end;
      if (L === 0) {
        if (P < buf.length) fail(decodeError("trailing_bytes", this.base + P, "bytes follow the end marker"), this.index);
        if (!atEnd) { this.pos = F; return; }
        this.finished = true;
        return;
      }
      if (L > this.maxMessage) fail(decodeError("message_limit", at, `a frame of ${L} bytes exceeds max_message=${this.maxMessage}`), this.index);
      const len = Number(L);
      if (len > buf.length - P) {
        if (!atEnd) return;
        fail(decodeError("truncated", at, `a frame declares ${len} bytes`), this.index);
      }
      const payload = buf.slice(P, P + len);
      const message: StreamMessage = { index: this.index, offset: this.base + P, payload };
      if (this.options.decodePayloads !== false) {
        try {
          message.value = decode(payload, this.options);
        } catch (e) {
          if (e instanceof DecodeError) {
            const moved = decodeError(e.kind, this.base + P + e.offset, e.message);
            fail(moved, this.index);
          }
          throw e;
        }
      }
      this.ready.push(message);
      this.index++;
      this.pos = P + len;
    }
  }
}

/** Writes a stream: the header, then one frame per message, and the end marker on close. */
export class StreamWriter {
  private chunks: Uint8Array[] = [new Uint8Array([0xab, 0x53, 0x01])];
  private closed = false;

  /** Adds one complete payload. */
  writePayload(payload: Uint8Array): void {
    if (this.closed) throw new Error("the stream is closed");
    if (payload.length === 0) throw new RangeError("a payload is never empty");
    const len: number[] = [];
    let v = payload.length;
    while (v >= 128) { len.push((v % 128) | 0x80); v = Math.floor(v / 128); }
    len.push(v);
    this.chunks.push(Uint8Array.from(len), payload);
  }

  /** Writes the end marker and returns the whole stream. */
  close(): Uint8Array {
    if (!this.closed) this.chunks.push(new Uint8Array([0]));
    this.closed = true;
    const n = this.chunks.reduce((a, c) => a + c.length, 0);
    const out = new Uint8Array(n);
    let p = 0;
    for (const c of this.chunks) { out.set(c, p); p += c.length; }
    return out;
  }
}
