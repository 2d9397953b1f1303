// The common base of EXT blob values: each keeps its validated blob, so that it is written
// back byte for byte, and exposes its fields as typed properties.

export const enum ExtCode {
  DATE = 0x01, TIME = 0x02, DATETIME = 0x03, TIMEDELTA = 0x04, TZINFO = 0x05, DECIMAL = 0x06,
  UUID = 0x07, FRACTION = 0x08, DEQUE = 0x09, ORDERED_DICT = 0x0a, COUNTER = 0x0b,
  DEFAULTDICT = 0x0c, RANGE = 0x0d, SLICE = 0x0e, ARRAY = 0x0f, PATH = 0x10, IP_ADDRESS = 0x11,
  IP_NETWORK = 0x12, IP_INTERFACE = 0x13, NDARRAY = 0x14, NUMPY_SCALAR = 0x15, OUT_OF_BAND = 0x16,
  NAMESPACE = 0x17, SINGLETON = 0x18,
}

export const EXT_NAMES: readonly string[] = [
  "", "DATE", "TIME", "DATETIME", "TIMEDELTA", "TZINFO", "DECIMAL", "UUID", "FRACTION", "DEQUE",
  "ORDERED_DICT", "COUNTER", "DEFAULTDICT", "RANGE", "SLICE", "ARRAY", "PATH", "IP_ADDRESS",
  "IP_NETWORK", "IP_INTERFACE", "NDARRAY", "NUMPY_SCALAR", "OUT_OF_BAND", "NAMESPACE", "SINGLETON",
];

/** The highest EXT code defined. */
export const MAX_EXT_CODE = 0x18;

export abstract class ExtBlobValue {
  abstract readonly code: number;
  /** The blob exactly as the layout of spec 5.16.3 lays it out. */
  readonly blob: Uint8Array;
  protected constructor(blob: Uint8Array) {
    this.blob = blob;
  }
  get extName(): string {
    return EXT_NAMES[this.code];
  }
}
