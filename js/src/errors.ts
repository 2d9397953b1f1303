// Errors: every decoding failure has exactly one kind (the snake_case names of spec section 9)
// and one absolute byte offset, so that callers and the test vectors can tell failures apart.

export const ERROR_KINDS = [
  "bad_magic", "unsupported_version", "unsupported_feature", "truncated", "trailing_bytes",
  "unknown_tag", "overlong_varint", "varint_overflow", "invalid_utf8", "noncanonical_int",
  "length_too_large", "depth_limit", "alloc_limit", "hash_limit", "bad_reference",
  "incomplete_reference", "supersede_without_ref", "unhashable", "duplicate_key",
  "duplicate_element", "unknown_ext", "invalid_ext", "bad_shape", "bad_name",
  "class_not_allowed", "missing_field", "unknown_field", "bad_state", "missing_buffer",
  "buffer_mismatch", "message_limit", "signature_required", "key_required", "unknown_key",
  "bad_signature", "expired", "timestamp_in_future", "timestamp_required", "bad_envelope",
  "unknown_compression", "bad_compression", "size_mismatch", "decompressed_too_large",
] as const;

export type ErrorKind = (typeof ERROR_KINDS)[number];

const LIMIT_KINDS: ReadonlySet<ErrorKind> = new Set<ErrorKind>([
  "depth_limit", "alloc_limit", "hash_limit", "message_limit", "decompressed_too_large",
]);
const SIGNATURE_KINDS: ReadonlySet<ErrorKind> = new Set<ErrorKind>([
  "signature_required", "key_required", "unknown_key", "bad_signature", "expired",
  "timestamp_in_future", "timestamp_required",
]);

/** A payload (or stream) could not be decoded: `kind` says why, `offset` where. */
export class DecodeError extends Error {
  readonly kind: ErrorKind;
  readonly offset: number;
  /** For stream readers: the index of the message concerned. */
  messageIndex?: number;
  /** True when the offset counts from the first byte of a decompressed body (spec 12.5). */
  inDecompressedBody = false;

  constructor(kind: ErrorKind, offset: number, message?: string) {
    super(`${kind} at offset ${offset}${message ? `: ${message}` : ""}`);
    this.kind = kind;
    this.offset = offset;
  }
}

/** The limit kinds (depth, allocation, hashing, stream message size, decompressed size). */
export class DecodeLimitError extends DecodeError {}
/** The signature kinds of spec section 12.2. */
export class SignatureError extends DecodeError {}
/** A shape names a class that the caller did not allow. */
export class ClassNotAllowedError extends DecodeError {
  constructor(offset: number, readonly module: string, readonly qualname: string) {
    super("class_not_allowed", offset,
      `class ${module}.${qualname} is not allowed: pass it in types to allow it`);
  }
}

/** Makes the error of the right class for a kind. */
export function decodeError(kind: ErrorKind, offset: number, message?: string): DecodeError {
  if (LIMIT_KINDS.has(kind)) return new DecodeLimitError(kind, offset, message);
  if (SIGNATURE_KINDS.has(kind)) return new SignatureError(kind, offset, message);
  return new DecodeError(kind, offset, message);
}

/** A value cannot be written; `path` says where it sits in the graph (`root[0]["a"]`). */
export class EncodeError extends TypeError {
  constructor(message: string, readonly path: string) {
    super(`${message} at ${path}`);
  }
}
