// PATH (spec 5.16.3): the pathlib class and the path text, which may hold lone surrogates.

import { BlobReader } from "./blob_reader.js";
import { ExtBlobValue, ExtCode } from "./base.js";
import { encodeUtf8Surrogates } from "../utf8.js";

export const PATH_FLAVOURS = ["PurePosixPath", "PureWindowsPath", "PosixPath", "WindowsPath"] as const;
export type PathFlavour = (typeof PATH_FLAVOURS)[number];

export class PyPath extends ExtBlobValue {
  readonly code = ExtCode.PATH;
  constructor(readonly flavour: PathFlavour, readonly path: string, blob?: Uint8Array) {
    super(blob ?? (() => {
      const text = encodeUtf8Surrogates(path);
      const b = new Uint8Array(1 + text.length);
      b[0] = PATH_FLAVOURS.indexOf(flavour);
      b.set(text, 1);
      return b;
    })());
  }
  static parse(blob: Uint8Array): PyPath {
    const r = new BlobReader("PATH", blob);
    const f = r.u8("flavour");
    if (f > 3) throw r.invalid(`flavour ${f} is not defined (0..3)`);
    const path = r.utf8Surrogates(r.rest(), "path");
    return new PyPath(PATH_FLAVOURS[f], path, blob);
  }
  override toString(): string { return this.path; }
}
