// The counted skip list: vectors that cannot apply to a JS implementation, each with its reason.
// The vector test fails if an entry names no vector or is never used, so the list cannot rot.

export interface Skip {
  file: "values" | "errors" | "canonical" | "envelopes" | "streams";
  name: string;
  /** decode: the decoding assertion; encode: the encoding assertion; both. */
  direction: "decode" | "encode" | "both";
  reason: string;
}

export const SKIPS: Skip[] = [
  { file: "values", name: "str surrogate pair written as two surrogates", direction: "encode",
    reason: "JS strings are UTF-16: the two lone surrogates U+D83D U+DE00 are the same JS string as U+1F600, which is written as strict UTF-8" },
  { file: "values", name: "packed ints: a shared int keeps the list a LIST", direction: "encode",
    reason: "JS strings, numbers and bigints are values without identity: an encoder cannot tell one shared str or int object from equal ones, so it never writes them as REF (decoding such REFs works)" },
  { file: "values", name: "packed ints: one shared item keeps the list a LIST", direction: "encode",
    reason: "JS strings, numbers and bigints are values without identity: an encoder cannot tell one shared str or int object from equal ones, so it never writes them as REF (decoding such REFs works)" },
  { file: "values", name: "packed floats: a shared float keeps the list a LIST", direction: "encode",
    reason: "JS strings, numbers and bigints are values without identity: an encoder cannot tell one shared str or int object from equal ones, so it never writes them as REF (decoding such REFs works)" },
  { file: "values", name: "tuple list: a str shared across rows is tracked, then referred to", direction: "encode",
    reason: "JS strings, numbers and bigints are values without identity: an encoder cannot tell one shared str or int object from equal ones, so it never writes them as REF (decoding such REFs works)" },
  { file: "values", name: "tuple list: a REF to where a row starts is its first item", direction: "encode",
    reason: "JS strings, numbers and bigints are values without identity: an encoder cannot tell one shared str or int object from equal ones, so it never writes them as REF (decoding such REFs works)" },
  { file: "values", name: "same str in two dicts (as key)", direction: "encode",
    reason: "JS strings, numbers and bigints are values without identity: an encoder cannot tell one shared str or int object from equal ones, so it never writes them as REF (decoding such REFs works)" },
  { file: "values", name: "records: a key that occurs before the list is a REF", direction: "encode",
    reason: "JS strings, numbers and bigints are values without identity: an encoder cannot tell one shared str or int object from equal ones, so it never writes them as REF (decoding such REFs works)" },
  { file: "values", name: "records: a shared dict keeps the list a LIST", direction: "encode",
    reason: "JS strings, numbers and bigints are values without identity: an encoder cannot tell one shared str or int object from equal ones, so it never writes them as REF (decoding such REFs works)" },
  { file: "values", name: "records: dicts of one key stay a LIST", direction: "encode",
    reason: "JS strings, numbers and bigints are values without identity: an encoder cannot tell one shared str or int object from equal ones, so it never writes them as REF (decoding such REFs works)" },
  { file: "values", name: "records: equal keys that are distinct objects keep the list a LIST", direction: "encode",
    reason: "JS strings are values without identity: equal keys are one key to a JS encoder, which writes these dicts as RECORDS; Python keeps distinct key objects distinct (decoding works)" },
  { file: "values", name: "records: dicts of two lengths stay a LIST", direction: "encode",
    reason: "JS strings, numbers and bigints are values without identity: an encoder cannot tell one shared str or int object from equal ones, so it never writes them as REF (decoding such REFs works)" },
  { file: "values", name: "records: keys in another order stay a LIST", direction: "encode",
    reason: "JS strings, numbers and bigints are values without identity: an encoder cannot tell one shared str or int object from equal ones, so it never writes them as REF (decoding such REFs works)" },
  { file: "values", name: "records: int keys keep the list a LIST", direction: "encode",
    reason: "JS strings, numbers and bigints are values without identity: an encoder cannot tell one shared str or int object from equal ones, so it never writes them as REF (decoding such REFs works)" },
  { file: "values", name: "records: a str shared by values across rows is tracked and referred to", direction: "encode",
    reason: "JS strings, numbers and bigints are values without identity: an encoder cannot tell one shared str or int object from equal ones, so it never writes them as REF (decoding such REFs works)" },
  { file: "values", name: "records: a REF to a value that starts a row", direction: "encode",
    reason: "JS strings, numbers and bigints are values without identity: an encoder cannot tell one shared str or int object from equal ones, so it never writes them as REF (decoding such REFs works)" },
  { file: "values", name: "records: a REF to a value that starts a row's first value", direction: "encode",
    reason: "JS strings, numbers and bigints are values without identity: an encoder cannot tell one shared str or int object from equal ones, so it never writes them as REF (decoding such REFs works)" },
  { file: "values", name: "object rows: a shared float keeps the column tagged", direction: "encode",
    reason: "JS strings, numbers and bigints are values without identity: an encoder cannot tell one shared str or int object from equal ones, so it never writes them as REF (decoding such REFs works)" },
  { file: "values", name: "object rows: a str shared by rows is tracked and referred to", direction: "encode",
    reason: "JS strings, numbers and bigints are values without identity: an encoder cannot tell one shared str or int object from equal ones, so it never writes them as REF (decoding such REFs works)" },
  { file: "values", name: "same str as key and value", direction: "encode",
    reason: "JS strings, numbers and bigints are values without identity: an encoder cannot tell one shared str or int object from equal ones, so it never writes them as REF (decoding such REFs works)" },
  { file: "values", name: "shared float", direction: "encode",
    reason: "JS strings, numbers and bigints are values without identity: an encoder cannot tell one shared str or int object from equal ones, so it never writes them as REF (decoding such REFs works)" },
  { file: "values", name: "shared INT", direction: "encode",
    reason: "JS strings, numbers and bigints are values without identity: an encoder cannot tell one shared str or int object from equal ones, so it never writes them as REF (decoding such REFs works)" },
  { file: "values", name: "shared BIGINT", direction: "encode",
    reason: "JS strings, numbers and bigints are values without identity: an encoder cannot tell one shared str or int object from equal ones, so it never writes them as REF (decoding such REFs works)" },
  { file: "values", name: "shared str after 130 bytes (two-byte REF offset)", direction: "encode",
    reason: "JS strings, numbers and bigints are values without identity: an encoder cannot tell one shared str or int object from equal ones, so it never writes them as REF (decoding such REFs works)" },
  { file: "values", name: "NEWOBJ_KW: keyword arguments from __getnewargs_ex__ (the name str shared)", direction: "encode",
    reason: "JS strings, numbers and bigints are values without identity: an encoder cannot tell one shared str or int object from equal ones, so it never writes them as REF (decoding such REFs works)" },
  { file: "values", name: "ext OUT_OF_BAND bytes, buffer 0", direction: "encode",
    reason: "the decoder builds host values from OUT_OF_BAND blobs; spec 10.1: their encoding is checked only by encoders that write EXT blobs as given (out-of-band encoding is tested with data above the 1 MiB threshold instead)" },
  { file: "values", name: "ext OUT_OF_BAND bytes from buffer 1 (buffer 0 unused)", direction: "encode",
    reason: "the decoder builds host values from OUT_OF_BAND blobs; spec 10.1: their encoding is checked only by encoders that write EXT blobs as given (out-of-band encoding is tested with data above the 1 MiB threshold instead)" },
  { file: "values", name: "ext OUT_OF_BAND array 'i' 1, -1", direction: "encode",
    reason: "the decoder builds host values from OUT_OF_BAND blobs; spec 10.1: their encoding is checked only by encoders that write EXT blobs as given (out-of-band encoding is tested with data above the 1 MiB threshold instead)" },
  { file: "values", name: "ext OUT_OF_BAND ndarray 2x3 <f8, C order", direction: "encode",
    reason: "the decoder builds host values from OUT_OF_BAND blobs; spec 10.1: their encoding is checked only by encoders that write EXT blobs as given (out-of-band encoding is tested with data above the 1 MiB threshold instead)" },
  { file: "values", name: "ext OUT_OF_BAND ndarray 2x3 <f8, Fortran order", direction: "encode",
    reason: "the decoder builds host values from OUT_OF_BAND blobs; spec 10.1: their encoding is checked only by encoders that write EXT blobs as given (out-of-band encoding is tested with data above the 1 MiB threshold instead)" },
  { file: "values", name: "ext OUT_OF_BAND ndarray 0-d >i4 (big-endian)", direction: "encode",
    reason: "the decoder builds host values from OUT_OF_BAND blobs; spec 10.1: their encoding is checked only by encoders that write EXT blobs as given (out-of-band encoding is tested with data above the 1 MiB threshold instead)" },
  { file: "values", name: "ext OUT_OF_BAND ndarray structured records [a <i2, b |u1]", direction: "encode",
    reason: "the decoder builds host values from OUT_OF_BAND blobs; spec 10.1: their encoding is checked only by encoders that write EXT blobs as given (out-of-band encoding is tested with data above the 1 MiB threshold instead)" },
  { file: "errors", name: "duplicate_key: 1 and 1.0", direction: "decode",
    reason: "python_only: Python's numeric equality across int, float, bool and complex; spec 7 lets another language keep both keys" },
  { file: "errors", name: "duplicate_key: True and 1", direction: "decode",
    reason: "python_only: Python's numeric equality across int, float, bool and complex; spec 7 lets another language keep both keys" },
  { file: "errors", name: "duplicate_key: 0.0 and -0.0", direction: "decode",
    reason: "python_only: Python's numeric equality across int, float, bool and complex; spec 7 lets another language keep both keys" },
  { file: "errors", name: "duplicate_key: 1 and complex 1+0j", direction: "decode",
    reason: "python_only: Python's numeric equality across int, float, bool and complex; spec 7 lets another language keep both keys" },
  { file: "errors", name: "duplicate_element: 2 and 2.0", direction: "decode",
    reason: "python_only: Python's numeric equality across int, float, bool and complex; spec 7 lets another language keep both keys" },
  { file: "errors", name: "hash_limit: 65 set elements with one hash value", direction: "decode",
    reason: "python_only: the elements collide under CPython's hash; JS Maps hash with a per-process seed, and the decoder bounds its key work by a budget instead" },
  { file: "errors", name: "EXT DATETIME: zoneinfo key not in the database", direction: "decode",
    reason: "python_only host check: the JS decoder has no time-zone database; it checks the key's characters" },
  { file: "errors", name: "EXT DECIMAL: exponent beyond the host's range (2^62)", direction: "decode",
    reason: "python_only host check: the JS Decimal keeps any exponent exactly (as a bigint when needed)" },
  { file: "errors", name: "EXT PATH: WindowsPath on a POSIX host", direction: "decode",
    reason: "python_only host check: the JS PyPath instantiates no path class" },
  { file: "errors", name: "EXT NDARRAY: structured dtype with an object field", direction: "decode",
    reason: "python_only host check: whether numpy accepts a structured dtype is for a numpy host to say" },
];

export const usedSkips = new Set<Skip>();

export function skipReason(file: Skip["file"], name: string, direction: "decode" | "encode"): string | null {
  const s = SKIPS.find((x) => x.file === file && x.name === name && (x.direction === direction || x.direction === "both"));
  if (!s) return null;
  usedSkips.add(s);
  return s.reason;
}
