// Reads the fields of one EXT blob. Every problem inside a blob is `invalid_ext` (spec 5.16.1):
// the blob's length was checked against the input already, so nothing in it is `truncated`.

import { VarintReader } from "../varint.js";
import { decodeUtf8, decodeUtf8Surrogates } from "../utf8.js";

/** A blob layout violation; the decoder reports it as `invalid_ext` at the EXT tag. */
export class InvalidExt extends Error {}

const varints = new VarintReader();

export class BlobReader {
  pos = 0;
  constructor(readonly what: string, readonly blob: Uint8Array) {}

  invalid(message: string): InvalidExt {
    return new InvalidExt(`${this.what}: ${message}`);
  }

  get left(): number {
    return this.blob.length - this.pos;
  }

  u8(field: string): number {
    if (this.pos >= this.blob.length) throw this.invalid(`${field} is missing`);
    return this.blob[this.pos++];
  }

  peek(): number | undefined {
    return this.pos < this.blob.length ? this.blob[this.pos] : undefined;
  }

  varint(field: string): number | bigint {
    if (!varints.read(this.blob, this.pos, this.blob.length)) {
      throw this.invalid(`${field} varint is ${["", "cut short", "too long", "not minimal"][varints.failure]}`);
    }
    this.pos = varints.end;
    return varints.exact;
  }

  /** A varint that must fit a JS number (every such field is bounded well below 2^53). */
  smallVarint(field: string, max: number): number {
    const v = this.varint(field);
    if (typeof v !== "number" || v > max) throw this.invalid(`${field} ${v} is above ${max}`);
    return v;
  }

  take(n: number, field: string): Uint8Array {
    if (n > this.left) throw this.invalid(`${field} runs past the end of the blob`);
    const out = this.blob.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  rest(): Uint8Array {
    const out = this.blob.subarray(this.pos);
    this.pos = this.blob.length;
    return out;
  }

  utf8(bytes: Uint8Array, field: string): string {
    const s = decodeUtf8(bytes, 0, bytes.length);
    if (s === null) throw this.invalid(`${field} is not valid UTF-8`);
    return s;
  }

  utf8Surrogates(bytes: Uint8Array, field: string): string {
    const s = decodeUtf8Surrogates(bytes, 0, bytes.length);
    if (s === null) throw this.invalid(`${field} is not valid UTF-8`);
    return s;
  }

  end(): void {
    if (this.pos !== this.blob.length) {
      throw this.invalid(`${this.blob.length - this.pos} bytes after the last field`);
    }
  }
}

/** Builds a blob from fields; the mirror of BlobReader for the encoder. */
export class BlobWriter {
  private bytes: number[] = [];
  u8(v: number): this { this.bytes.push(v & 0xff); return this; }
  varint(v: number | bigint): this {
    if (typeof v === "number") {
      while (v >= 128) { this.bytes.push((v % 128) | 0x80); v = Math.floor(v / 128); }
      this.bytes.push(v);
    } else {
      while (v >= 128n) { this.bytes.push(Number(v & 0x7fn) | 0x80); v >>= 7n; }
      this.bytes.push(Number(v));
    }
    return this;
  }
  raw(b: ArrayLike<number>): this { for (let i = 0; i < b.length; i++) this.bytes.push(b[i]); return this; }
  done(): Uint8Array { return Uint8Array.from(this.bytes); }
}
