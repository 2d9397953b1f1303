// DECIMAL (spec 5.16.3): sign, coefficient digits and exponent exactly as written, never
// through a binary float, so Decimal("1.50") stays distinct from Decimal("1.5").

import { BlobReader, BlobWriter } from "./blob_reader.js";
import { ExtBlobValue, ExtCode } from "./base.js";
import { unzigzag, zigzag } from "../varint.js";

export type DecimalKind = "finite" | "Infinity" | "NaN" | "sNaN";
const KINDS: readonly DecimalKind[] = ["finite", "Infinity", "NaN", "sNaN"];

function checkDigits(r: BlobReader, digits: Uint8Array, field: string): string {
  for (const c of digits) if (c < 0x30 || c > 0x39) throw r.invalid(`${field} holds byte 0x${c.toString(16)}, not a digit`);
  if (digits.length > 1 && digits[0] === 0x30) throw r.invalid(`${field} has a leading zero`);
  return String.fromCharCode(...digits);
}

export class Decimal extends ExtBlobValue {
  readonly code = ExtCode.DECIMAL;
  /** `digits` is the coefficient (finite) or the NaN payload (possibly empty). */
  constructor(readonly negative: boolean, readonly kind: DecimalKind, readonly digits: string,
    readonly exponent: number | bigint = 0, blob?: Uint8Array) {
    super(blob ?? (() => {
      const w = new BlobWriter().u8((negative ? 1 : 0) | (KINDS.indexOf(kind) << 1));
      if (kind === "finite") w.varint(zigzag(exponent));
      w.raw(new TextEncoder().encode(digits));
      return w.done();
    })());
  }
  static parse(blob: Uint8Array): Decimal {
    const r = new BlobReader("DECIMAL", blob);
    const form = r.u8("form");
    if (form & 0xf8) throw r.invalid(`form 0x${form.toString(16)} sets bits other than 0-2`);
    const kind = KINDS[(form >> 1) & 3];
    let exponent: number | bigint = 0;
    let digits = "";
    switch (kind) {
      case "finite": {
        exponent = unzigzag(r.varint("exponent"));
        const raw = r.rest();
        if (raw.length === 0) throw r.invalid("coefficient has no digits");
        digits = checkDigits(r, raw, "coefficient");
        break;
      }
      case "Infinity":
        break;
      case "NaN":
      case "sNaN":
        digits = checkDigits(r, r.rest(), "NaN payload");
        // Spec 5.16.3: "without a leading 0", so a payload of exactly "0" is refused too.
        if (digits === "0") throw r.invalid("NaN payload has a leading zero");
        break;
    }
    r.end();
    return new Decimal((form & 1) === 1, kind, digits, exponent, blob);
  }
  /** Python's Decimal constructor text: "-1250E-2", "Infinity", "NaN123", "-sNaN". */
  override toString(): string {
    const sign = this.negative ? "-" : "";
    switch (this.kind) {
      case "finite": return `${sign}${this.digits}E${this.exponent}`;
      case "Infinity": return `${sign}Infinity`;
      case "NaN": case "sNaN": return `${sign}${this.kind}${this.digits}`;
    }
  }
  /** Parses decimal text such as "-12.50", "1E+3", "NaN", "-Infinity". */
  static fromString(text: string): Decimal {
    const m = /^([+-]?)(?:(\d+)(?:\.(\d*))?|\.(\d+))(?:[eE]([+-]?\d+))?$/.exec(text.trim());
    if (m) {
      const int = m[2] ?? "", frac = m[3] ?? m[4] ?? "";
      const exp = BigInt(m[5] ?? "0") - BigInt(frac.length);
      const digits = (int + frac).replace(/^0+(?=\d)/, "");
      const e = exp >= -9007199254740991n && exp <= 9007199254740991n ? Number(exp) : exp;
      return new Decimal(m[1] === "-", "finite", digits, e);
    }
    const s = /^([+-]?)(Infinity|Inf|NaN|sNaN)(\d*)$/i.exec(text.trim());
    if (!s) throw new SyntaxError(`not a decimal: ${text}`);
    const word = s[2].toLowerCase();
    const kind: DecimalKind = word.startsWith("inf") ? "Infinity" : word === "nan" ? "NaN" : "sNaN";
    return new Decimal(s[1] === "-", kind, s[3].replace(/^0+(?=\d)/, ""));
  }
}
