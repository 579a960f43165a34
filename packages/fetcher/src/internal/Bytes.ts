/** Small helpers shared by the fetcher modules. */
import { Buffer } from "node:buffer"

/** A Node Buffer over the same memory (decoded records may be plain Uint8Array views). */
export const toBuffer = (bytes: Uint8Array): Buffer =>
  Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)

/** The Kafka error code a storage error carries; anything else is a defect and is rethrown. */
export const errorCodeOf = (e: unknown): number => {
  if (typeof e === "object" && e !== null && "errorCode" in e && typeof e.errorCode === "number") return e.errorCode
  throw e
}
