/**
 * The record-batch compression codecs: none (0), gzip (1), snappy (2), lz4 (3) and zstd (4).
 *
 * Used by tools and tests to build and read batches; the broker's data path never decompresses, so
 * nothing here may be called per fetched or mirrored batch. Failures are `CompressionError` values,
 * never exceptions.
 *
 * Framing matches Kafka's clients: gzip is a gzip member; snappy is written with the xerial framing
 * (magic `\x82SNAPPY\x00`, int32 version 1, int32 compatible version 1, then int32-length-prefixed raw
 * snappy blocks) and read either framed or raw (librdkafka sends one raw block); lz4 is the LZ4 frame
 * format with independent blocks and no checksums; zstd is a zstd frame.
 */
import { Data, Either } from "effect"
import { Buffer } from "node:buffer"
import { gunzipSync, gzipSync } from "node:zlib"
import { compressFrameSync, decompressFrameSync } from "lz4-napi"
import { compressSync as snappyCompress, uncompressSync as snappyUncompress } from "snappy"
import { compress as zstdCompress, decompress as zstdDecompress } from "zstd-napi"

/** The compression codec id of a batch's attributes (bits 0-2). */
export type CompressionType = 0 | 1 | 2 | 3 | 4

export const names: Readonly<Record<CompressionType, string>> = {
  0: "none",
  1: "gzip",
  2: "snappy",
  3: "lz4",
  4: "zstd"
}

export const all: ReadonlyArray<CompressionType> = [0, 1, 2, 3, 4]

export const isCompressionType = (n: number): n is CompressionType => Number.isInteger(n) && n >= 0 && n <= 4

/** A codec failed on its input (corrupt or truncated compressed data, or a native library error). */
export class CompressionError extends Data.TaggedError("CompressionError")<{
  readonly codec: string
  readonly operation: "compress" | "decompress"
  readonly message: string
}> {}

const XERIAL_MAGIC = Buffer.from([0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00])
const XERIAL_HEADER_SIZE = 16
/** Block size of Kafka's Java producer for xerial snappy. */
const XERIAL_BLOCK_SIZE = 32 * 1024

const asBuffer = (b: Uint8Array): Buffer => (Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength))

/**
 * A snappy element of n bytes expands to at most 64 bytes (a 3-byte copy of 64), so a block whose
 * declared length exceeds 22x its size is corrupt; checking first keeps a forged length from making the
 * native decoder allocate gigabytes.
 */
const snappyDeclaredLength = (data: Uint8Array): number => {
  let result = 0
  for (let i = 0; i < 5 && i < data.length; i++) {
    const b = data[i]!
    result += (b & 0x7f) * 2 ** (7 * i)
    if ((b & 0x80) === 0) return result
  }
  throw new Error("invalid snappy length header")
}

const snappyBlock = (data: Uint8Array): Buffer => {
  const declared = snappyDeclaredLength(data)
  if (declared > data.length * 22) throw new Error(`snappy block declares ${declared} bytes from ${data.length}`)
  const out = snappyUncompress(data, { asBuffer: true })
  return typeof out === "string" ? Buffer.from(out, "utf8") : out
}

const xerialCompress = (data: Buffer): Buffer => {
  const parts: Buffer[] = [XERIAL_MAGIC, Buffer.from([0, 0, 0, 1, 0, 0, 0, 1])]
  for (let p = 0; p < data.length; p += XERIAL_BLOCK_SIZE) {
    const block = snappyCompress(data.subarray(p, p + XERIAL_BLOCK_SIZE))
    const length = Buffer.allocUnsafe(4)
    length.writeInt32BE(block.length)
    parts.push(length, block)
  }
  return Buffer.concat(parts)
}

const isXerial = (data: Buffer): boolean =>
  data.length >= XERIAL_HEADER_SIZE && data.subarray(0, XERIAL_MAGIC.length).equals(XERIAL_MAGIC)

const snappyDecompress = (data: Buffer): Buffer => {
  if (!isXerial(data)) return snappyBlock(data)
  const blocks: Buffer[] = []
  let p = XERIAL_HEADER_SIZE
  while (p < data.length) {
    if (data.length - p < 4) throw new Error(`truncated xerial block length at ${p}`)
    const n = data.readInt32BE(p)
    p += 4
    if (n < 0 || p + n > data.length) throw new Error(`xerial block of ${n} bytes at ${p} exceeds the input`)
    blocks.push(snappyBlock(data.subarray(p, p + n)))
    p += n
  }
  return Buffer.concat(blocks)
}

const run = (
  type: CompressionType,
  operation: "compress" | "decompress",
  f: () => Buffer
): Either.Either<Buffer, CompressionError> => {
  try {
    return Either.right(f())
  } catch (e) {
    return Either.left(
      new CompressionError({ codec: names[type], operation, message: e instanceof Error ? e.message : String(e) })
    )
  }
}

/** Compresses `data` as a batch's records section. `none` returns the input unchanged. */
export const compress = (type: CompressionType, data: Uint8Array): Either.Either<Buffer, CompressionError> => {
  const input = asBuffer(data)
  switch (type) {
    case 0:
      return Either.right(input)
    case 1:
      return run(type, "compress", () => gzipSync(input))
    case 2:
      return run(type, "compress", () => xerialCompress(input))
    case 3:
      return run(type, "compress", () => compressFrameSync(input, { contentChecksum: false, blockChecksums: false }))
    case 4:
      return run(type, "compress", () => zstdCompress(input))
  }
}

/** Decompresses a batch's records section. `none` returns the input unchanged. */
export const decompress = (type: CompressionType, data: Uint8Array): Either.Either<Buffer, CompressionError> => {
  const input = asBuffer(data)
  switch (type) {
    case 0:
      return Either.right(input)
    case 1:
      return run(type, "decompress", () => gunzipSync(input))
    case 2:
      return run(type, "decompress", () => snappyDecompress(input))
    case 3:
      return run(type, "decompress", () => decompressFrameSync(input))
    case 4:
      return run(type, "decompress", () => zstdDecompress(input))
  }
}
