// IP_ADDRESS, IP_NETWORK, IP_INTERFACE (spec 5.16.3): packed addresses, an IPv6 scope zone,
// and for networks and interfaces a prefix length.

import { BlobReader } from "./blob_reader.js";
import { ExtBlobValue, ExtCode } from "./base.js";

function readAddress(r: BlobReader): { bytes: Uint8Array; scope: string | null } {
  const rest = r.rest();
  if (rest.length === 4) return { bytes: rest, scope: null };
  if (rest.length < 16) throw r.invalid(`address of ${rest.length} bytes, not 4 or at least 16`);
  const bytes = rest.subarray(0, 16);
  if (rest.length === 16) return { bytes, scope: null };
  const scope = r.utf8(rest.subarray(16), "scope zone");
  if (/[%/]/.test(scope)) throw r.invalid("scope zone contains '%' or '/'");
  return { bytes, scope };
}

function addressBlob(prefix: number | null, bytes: Uint8Array, scope: string | null): Uint8Array {
  if (bytes.length !== 4 && bytes.length !== 16) throw new RangeError("an address has 4 or 16 bytes");
  const s = scope === null ? new Uint8Array(0) : new TextEncoder().encode(scope);
  const head = prefix === null ? 0 : 1;
  const b = new Uint8Array(head + bytes.length + s.length);
  if (prefix !== null) b[0] = prefix;
  b.set(bytes, head);
  b.set(s, head + bytes.length);
  return b;
}

function addressText(bytes: Uint8Array, scope: string | null): string {
  if (bytes.length === 4) return Array.from(bytes).join(".");
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((bytes[i] << 8) | bytes[i + 1]).toString(16));
  // The longest run of two or more zero groups becomes "::", as Python writes it.
  let best = -1, bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (groups[i] !== "0") { i++; continue; }
    let j = i;
    while (j < 8 && groups[j] === "0") j++;
    if (j - i > bestLen) { best = i; bestLen = j - i; }
    i = j;
  }
  let text = groups.join(":");
  if (best >= 0) text = `${groups.slice(0, best).join(":")}::${groups.slice(best + bestLen).join(":")}`;
  return scope === null ? text : `${text}%${scope}`;
}

export class IpAddress extends ExtBlobValue {
  readonly code = ExtCode.IP_ADDRESS;
  constructor(readonly bytes: Uint8Array, readonly scope: string | null = null, blob?: Uint8Array) {
    super(blob ?? addressBlob(null, bytes, scope));
  }
  get version(): 4 | 6 { return this.bytes.length === 4 ? 4 : 6; }
  static parse(blob: Uint8Array): IpAddress {
    const r = new BlobReader("IP_ADDRESS", blob);
    const a = readAddress(r);
    return new IpAddress(a.bytes, a.scope, blob);
  }
  override toString(): string { return addressText(this.bytes, this.scope); }
}

abstract class Prefixed extends ExtBlobValue {
  constructor(readonly prefix: number, readonly bytes: Uint8Array, readonly scope: string | null, blob?: Uint8Array) {
    super(blob ?? addressBlob(prefix, bytes, scope));
  }
  get version(): 4 | 6 { return this.bytes.length === 4 ? 4 : 6; }
  protected static read(what: string, blob: Uint8Array, network: boolean) {
    const r = new BlobReader(what, blob);
    const prefix = r.u8("prefix");
    const a = readAddress(r);
    const max = a.bytes.length * 8;
    if (prefix > max) throw r.invalid(`prefix length ${prefix} is above ${max}`);
    if (network) {
      for (let bit = prefix; bit < max; bit++) {
        if (a.bytes[bit >> 3] & (0x80 >> (bit & 7))) throw r.invalid(`host bits are set for prefix ${prefix}`);
      }
    }
    return { prefix, ...a };
  }
  override toString(): string { return `${addressText(this.bytes, this.scope)}/${this.prefix}`; }
}

export class IpNetwork extends Prefixed {
  readonly code = ExtCode.IP_NETWORK;
  static parse(blob: Uint8Array): IpNetwork {
    const a = Prefixed.read("IP_NETWORK", blob, true);
    return new IpNetwork(a.prefix, a.bytes, a.scope, blob);
  }
}

export class IpInterface extends Prefixed {
  readonly code = ExtCode.IP_INTERFACE;
  static parse(blob: Uint8Array): IpInterface {
    const a = Prefixed.read("IP_INTERFACE", blob, false);
    return new IpInterface(a.prefix, a.bytes, a.scope, blob);
  }
}
