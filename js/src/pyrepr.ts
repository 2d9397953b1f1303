// Python's repr() of decoded values, for inspect listings (so the viewer reads like the CLI)
// and Python's float repr and Decimal str for the JSON mapping.

import { Float, Complex, ByteArray, Tuple, FrozenSet, Placeholder, PySingleton } from "./types.js";
import { AmberDate, AmberTime, AmberDateTime, TimeDelta, TzInfo, type Tz } from "./ext/datetime.js";
import { Decimal } from "./ext/decimal.js";
import { Uuid } from "./ext/uuid.js";
import { PyPath } from "./ext/path.js";
import { IpAddress, IpNetwork, IpInterface } from "./ext/ip.js";
import { PyArray } from "./ext/array.js";
import { NDArray, NumpyScalar } from "./ext/ndarray.js";
import { Deque, Namespace, Fraction, Range, Slice } from "./ext/composite.js";

/** Python's repr of a binary64 (shortest round-trip digits, Python's layout). */
export function pyFloatRepr(x: number): string {
  if (Number.isNaN(x)) return "nan";
  if (x === Infinity) return "inf";
  if (x === -Infinity) return "-inf";
  if (x === 0) return Object.is(x, -0) ? "-0.0" : "0.0";
  const [mant, expText] = x.toExponential().split("e");
  const exp = Number(expText);
  const neg = mant.startsWith("-");
  const digits = mant.replace("-", "").replace(".", "");
  let out: string;
  if (exp >= -4 && exp < 16) {
    if (exp < 0) out = `0.${"0".repeat(-exp - 1)}${digits}`;
    else if (digits.length <= exp + 1) out = `${digits}${"0".repeat(exp + 1 - digits.length)}.0`;
    else out = `${digits.slice(0, exp + 1)}.${digits.slice(exp + 1)}`;
  } else {
    const m = digits.length > 1 ? `${digits[0]}.${digits.slice(1)}` : digits;
    out = `${m}e${exp < 0 ? "-" : "+"}${String(Math.abs(exp)).padStart(2, "0")}`;
  }
  return neg ? `-${out}` : out;
}

/** Python's str() of a Decimal (the General Decimal Arithmetic to-scientific-string). */
export function decimalText(d: Decimal): string {
  const sign = d.negative ? "-" : "";
  switch (d.kind) {
    case "Infinity": return `${sign}Infinity`;
    case "NaN": case "sNaN": return `${sign}${d.kind}${d.digits}`;
    case "finite": {
      const c = d.digits;
      const e = BigInt(d.exponent);
      const adjusted = e + BigInt(c.length - 1);
      if (e <= 0n && adjusted >= -6n) {
        if (e === 0n) return sign + c;
        const point = c.length + Number(e);
        return sign + (point > 0 ? `${c.slice(0, point)}.${c.slice(point)}` : `0.${"0".repeat(-point)}${c}`);
      }
      const m = c.length > 1 ? `${c[0]}.${c.slice(1)}` : c;
      return `${sign}${m}E${adjusted >= 0n ? "+" : "-"}${adjusted < 0n ? -adjusted : adjusted}`;
    }
  }
}

function isPrintable(cp: number): boolean {
  if (cp < 0x20 || (cp >= 0x7f && cp <= 0xa0) || cp === 0xad) return false;
  if (cp >= 0xd800 && cp <= 0xdfff) return false;
  if ((cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2060 && cp <= 0x206f) || cp === 0xfeff || cp === 0x200b) return false;
  return !/[\p{Cn}\p{Co}\p{Zl}\p{Zp}\p{Cc}\p{Cf}]|\p{Zs}/u.test(String.fromCodePoint(cp)) || cp === 0x20;
}

function strRepr(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = quote;
  for (let i = 0; i < s.length; i++) {
    let cp = s.charCodeAt(i);
    if (cp >= 0xd800 && cp <= 0xdbff && i + 1 < s.length) {
      const lo = s.charCodeAt(i + 1);
      if (lo >= 0xdc00 && lo <= 0xdfff) { cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00); i++; }
    }
    const ch = String.fromCodePoint(cp);
    if (ch === quote || ch === "\\") out += `\\${ch}`;
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (isPrintable(cp)) out += ch;
    else if (cp < 0x100) out += `\\x${cp.toString(16).padStart(2, "0")}`;
    else if (cp < 0x10000) out += `\\u${cp.toString(16).padStart(4, "0")}`;
    else out += `\\U${cp.toString(16).padStart(8, "0")}`;
  }
  return out + quote;
}

function bytesRepr(b: Uint8Array): string {
  let hasSingle = false, hasDouble = false;
  for (const c of b) { if (c === 0x27) hasSingle = true; if (c === 0x22) hasDouble = true; }
  const quote = hasSingle && !hasDouble ? '"' : "'";
  let out = `b${quote}`;
  for (const c of b) {
    if (c === quote.charCodeAt(0) || c === 0x5c) out += `\\${String.fromCharCode(c)}`;
    else if (c === 0x0a) out += "\\n";
    else if (c === 0x0d) out += "\\r";
    else if (c === 0x09) out += "\\t";
    else if (c >= 0x20 && c < 0x7f) out += String.fromCharCode(c);
    else out += `\\x${c.toString(16).padStart(2, "0")}`;
  }
  return out + quote;
}

function complexPart(x: number): string {
  const r = pyFloatRepr(x);
  return r.endsWith(".0") ? r.slice(0, -2) : r;
}

function tdRepr(us: number): string {
  const neg = us < 0;
  let rest = Math.abs(us);
  const days = Math.floor(rest / 86_400_000_000);
  rest -= days * 86_400_000_000;
  const seconds = Math.floor(rest / 1_000_000);
  const micro = rest - seconds * 1_000_000;
  // Python normalizes negative deltas to days < 0 with positive seconds.
  let d = neg ? -days : days, s = seconds, u = micro;
  if (neg && (s || u)) {
    d -= 1;
    const total = 86_400_000_000 - (seconds * 1_000_000 + micro);
    s = Math.floor(total / 1_000_000);
    u = total - s * 1_000_000;
  }
  const parts: string[] = [];
  if (d) parts.push(`days=${d}`);
  if (s) parts.push(`seconds=${s}`);
  if (u) parts.push(`microseconds=${u}`);
  return `datetime.timedelta(${parts.join(", ")})`;
}

function tzRepr(tz: Tz): string {
  switch (tz.kind) {
    case "utc": return "datetime.timezone.utc";
    case "zone": return `zoneinfo.ZoneInfo(key=${strRepr(tz.key)})`;
    case "fixed":
      if (tz.offsetMicroseconds === 0 && tz.name === null) return "datetime.timezone.utc";
      return `datetime.timezone(${tdRepr(tz.offsetMicroseconds)}${tz.name !== null ? `, ${strRepr(tz.name)}` : ""})`;
  }
}

function clockArgs(h: number, m: number, s: number, us: number): string[] {
  const args = [String(h), String(m)];
  if (s || us) args.push(String(s));
  if (us) args.push(String(us));
  return args;
}

/** Python's repr of a decoded value (best effort for library types). */
export function pyRepr(v: unknown): string {
  if (v === null) return "None";
  if (v === true) return "True";
  if (v === false) return "False";
  if (typeof v === "number") return Number.isSafeInteger(v) ? String(v) : pyFloatRepr(v);
  if (typeof v === "bigint") return String(v);
  if (typeof v === "string") return strRepr(v);
  if (v instanceof Float) return pyFloatRepr(v.value);
  if (v instanceof Complex) {
    const im = `${complexPart(v.im)}j`;
    if (Object.is(v.re, 0)) return im;
    const sign = v.im < 0 || Object.is(v.im, -0) ? "" : "+";
    return `(${complexPart(v.re)}${sign}${im})`;
  }
  if (v instanceof ByteArray) return `bytearray(${bytesRepr(v)})`;
  if (v instanceof Uint8Array) return bytesRepr(v);
  if (v instanceof AmberDate) return `datetime.date(${v.year}, ${v.month}, ${v.day})`;
  if (v instanceof AmberTime || v instanceof AmberDateTime) {
    const args = v instanceof AmberDateTime ? [String(v.year), String(v.month), String(v.day)] : [];
    args.push(...clockArgs(v.hour, v.minute, v.second, v.microsecond));
    if (v.tz !== null) args.push(`tzinfo=${tzRepr(v.tz)}`);
    if (v.fold) args.push("fold=1");
    return `datetime.${v instanceof AmberDateTime ? "datetime" : "time"}(${args.join(", ")})`;
  }
  if (v instanceof TimeDelta) return tdRepr(v.days * 86_400_000_000 + v.seconds * 1_000_000 + v.microseconds);
  if (v instanceof TzInfo) return tzRepr(v.tz);
  if (v instanceof Decimal) return `Decimal(${strRepr(decimalText(v))})`;
  if (v instanceof Uuid) return `UUID(${strRepr(v.toString())})`;
  if (v instanceof PyPath) return `${v.flavour}(${strRepr(v.path)})`;
  if (v instanceof IpAddress) return `IPv${v.version}Address(${strRepr(v.toString())})`;
  if (v instanceof IpNetwork) return `IPv${v.version}Network(${strRepr(v.toString())})`;
  if (v instanceof IpInterface) return `IPv${v.version}Interface(${strRepr(v.toString())})`;
  if (v instanceof PyArray) return `array(${strRepr(v.typecode)}, [${Array.from(v.items(), (x) => (typeof x === "number" && !Number.isInteger(x) ? pyFloatRepr(x) : String(x))).join(", ")}])`;
  if (v instanceof NDArray) return `ndarray(shape=(${v.shape.join(", ")}${v.shape.length === 1 ? "," : ""}), dtype=${strRepr(v.dtype)})`;
  if (v instanceof NumpyScalar) return `numpy scalar ${v.dtype}`;
  if (v instanceof Fraction) return `Fraction(${v.numerator}, ${v.denominator})`;
  if (v instanceof Range) return v.step === 1 ? `range(${v.start}, ${v.stop})` : `range(${v.start}, ${v.stop}, ${v.step})`;
  if (v instanceof Slice) return `slice(${pyRepr(v.start)}, ${pyRepr(v.stop)}, ${pyRepr(v.step)})`;
  if (v instanceof Deque) return `deque([${v.items.map(pyRepr).join(", ")}]${v.maxlen !== null ? `, maxlen=${v.maxlen}` : ""})`;
  if (v instanceof PySingleton) return v.name;
  if (v instanceof Namespace) return `namespace(${[...v].map(([k, x]) => `${k}=${pyRepr(x)}`).join(", ")})`;
  if (v instanceof Placeholder) return `<Placeholder ${v.module}:${v.qualname} ${v.kind}>`;
  if (v instanceof Tuple) return `(${v.map(pyRepr).join(", ")}${v.length === 1 ? "," : ""})`;
  if (Array.isArray(v)) return `[${v.map(pyRepr).join(", ")}]`;
  if (v instanceof FrozenSet) return v.size ? `frozenset({${[...v].map(pyRepr).join(", ")}})` : "frozenset()";
  if (v instanceof Set) return v.size ? `{${[...v].map(pyRepr).join(", ")}}` : "set()";
  if (v instanceof Map) return `{${[...v].map(([k, x]) => `${pyRepr(k)}: ${pyRepr(x)}`).join(", ")}}`;
  return `<${(v as object).constructor?.name ?? typeof v}>`;
}
