// Types for the parts of lz4js that the encoder uses.
declare module "lz4js" {
  export function compressBound(n: number): number;
  export function compressBlock(src: Uint8Array, dst: Uint8Array, sIndex: number, sLength: number, hashTable: Uint32Array): number;
}
