// amber for TypeScript and JavaScript: the public API.

export { decode, decodeAsync, verify, type DecodeOptions } from "./api.js";
export { encode, encodeAsync, type EncodeOptions } from "./encode.js";
export { initZstd, zstdCompressor } from "./compress/zstd_write.js";
export { StreamReader, StreamWriter, readStream, type StreamOptions, type StreamMessage } from "./stream.js";
export { envelopeInfo, deriveKeyId, deriveKeyIdAsync, type SigningKey, type EnvelopeInfo } from "./envelope.js";
export { DecodeError, DecodeLimitError, SignatureError, ClassNotAllowedError, EncodeError, ERROR_KINDS, type ErrorKind } from "./errors.js";
export { Tuple, FrozenSet, ByteArray, Complex, Float, Placeholder, CLASS, OBJECT_KINDS, PySingleton, Ellipsis, NotImplemented, creationOf, type ObjectKind, type Creation } from "./types.js";
export type { AllowedClass, ClassInfo, BuiltinBase } from "./object.js";
export { BUILTIN_EXCEPTIONS, BUILTIN_TYPES } from "./object.js";
export { ExtBlobValue, EXT_NAMES } from "./ext/base.js";
export { parseExtBlob } from "./ext/index.js";
export { AmberDate, AmberTime, AmberDateTime, TimeDelta, TzInfo, type Tz } from "./ext/datetime.js";
export { Decimal } from "./ext/decimal.js";
export { Uuid } from "./ext/uuid.js";
export { PyArray } from "./ext/array.js";
export { PyPath } from "./ext/path.js";
export { IpAddress, IpNetwork, IpInterface } from "./ext/ip.js";
export { NDArray, NumpyScalar } from "./ext/ndarray.js";
export { Deque, Namespace, OrderedDict, Counter, DefaultDict, Fraction, Range, Slice } from "./ext/composite.js";
export { OOB_THRESHOLD } from "./ext/out_of_band.js";
export { trace, inspectLines, stats, statsLines, type Trace } from "./inspect.js";
export type { TraceEvent, TraceInfo } from "./decode.js";
export { toJson } from "./json.js";
export { pyRepr, pyFloatRepr, decimalText } from "./pyrepr.js";
