// UUID (spec 5.16.3): 16 big-endian bytes and, optionally, Python's SafeUUID.is_safe.

import { BlobReader } from "./blob_reader.js";
import { ExtBlobValue, ExtCode } from "./base.js";

export type SafeUuid = "unknown" | "safe" | "unsafe";

export class Uuid extends ExtBlobValue {
  readonly code = ExtCode.UUID;
  constructor(readonly bytes: Uint8Array, readonly isSafe: SafeUuid = "unknown", blob?: Uint8Array) {
    super(blob ?? (() => {
      if (bytes.length !== 16) throw new RangeError("a UUID has 16 bytes");
      const b = new Uint8Array(isSafe === "unknown" ? 16 : 17);
      b.set(bytes);
      if (isSafe !== "unknown") b[16] = isSafe === "safe" ? 0 : 1;
      return b;
    })());
  }
  static parse(blob: Uint8Array): Uuid {
    const r = new BlobReader("UUID", blob);
    if (blob.length !== 16 && blob.length !== 17) throw r.invalid(`blob of ${blob.length} bytes, not 16 or 17`);
    let safe: SafeUuid = "unknown";
    if (blob.length === 17) {
      if (blob[16] > 1) throw r.invalid(`is_safe byte ${blob[16]} is not 0 or 1`);
      safe = blob[16] === 0 ? "safe" : "unsafe";
    }
    return new Uuid(blob.subarray(0, 16), safe, blob);
  }
  static fromString(text: string): Uuid {
    const hex = text.replace(/[{}-]/g, "").replace(/^urn:uuid:/i, "");
    if (!/^[0-9a-fA-F]{32}$/.test(hex)) throw new SyntaxError(`not a UUID: ${text}`);
    const b = new Uint8Array(16);
    for (let i = 0; i < 16; i++) b[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
    return new Uuid(b);
  }
  override toString(): string {
    const h = Array.from(this.bytes, (x) => x.toString(16).padStart(2, "0")).join("");
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
  }
}
