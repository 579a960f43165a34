/**
 * CRC-32C (Castagnoli), the checksum of record batch v2, computed by a native library.
 */
import { crc32c } from "@node-rs/crc32"

/** CRC-32C of `bytes`, as an unsigned 32-bit number. */
export const compute = (bytes: Uint8Array, initial = 0): number => crc32c(bytes as Buffer, initial) >>> 0
