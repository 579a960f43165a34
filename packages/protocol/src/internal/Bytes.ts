/**
 * Kafka wire primitives: a bounds-checked reader and a chunked writer.
 *
 * Owns the byte-level encodings (fixed-width ints, unsigned and zigzag varints, uuid, float64, bool,
 * classic and compact strings/bytes/arrays). It must not know about messages. Reads past the end throw
 * `DecodeFailure`, which the message layer turns into a typed error.
 */
import { Buffer } from "node:buffer"

/** Thrown inside the hot decode loop; never escapes the public decode functions. */
export class DecodeFailure extends Error {
  constructor(
    message: string,
    readonly position: number
  ) {
    super(message)
  }
}

/** Thrown by the writer when a value cannot be represented at the requested version. */
export class EncodeFailure extends Error {}

const textDecoder = new TextDecoder("utf-8", { fatal: false, ignoreBOM: true })

export class Reader {
  pos: number
  readonly end: number
  constructor(
    readonly buf: Buffer,
    start = 0,
    end = buf.length
  ) {
    this.pos = start
    this.end = end
  }
  get remaining(): number {
    return this.end - this.pos
  }
  private need(n: number): number {
    const p = this.pos
    if (n < 0 || p + n > this.end) throw new DecodeFailure(`need ${n} bytes at ${p}, have ${this.end - p}`, p)
    this.pos = p + n
    return p
  }
  int8(): number {
    return this.buf.readInt8(this.need(1))
  }
  uint8(): number {
    return this.buf.readUInt8(this.need(1))
  }
  int16(): number {
    return this.buf.readInt16BE(this.need(2))
  }
  uint16(): number {
    return this.buf.readUInt16BE(this.need(2))
  }
  int32(): number {
    return this.buf.readInt32BE(this.need(4))
  }
  uint32(): number {
    return this.buf.readUInt32BE(this.need(4))
  }
  int64(): bigint {
    return this.buf.readBigInt64BE(this.need(8))
  }
  float64(): number {
    return this.buf.readDoubleBE(this.need(8))
  }
  bool(): boolean {
    return this.buf.readUInt8(this.need(1)) !== 0
  }
  uvarint(): number {
    let result = 0
    let shift = 0
    for (;;) {
      const b = this.uint8()
      if (shift === 28 && (b & 0xf0) !== 0) throw new DecodeFailure("unsigned varint too long", this.pos)
      result |= (b & 0x7f) << shift
      if ((b & 0x80) === 0) return result >>> 0
      shift += 7
    }
  }
  varint(): number {
    const u = this.uvarint()
    return (u >>> 1) ^ -(u & 1)
  }
  varlong(): bigint {
    let result = 0n
    let shift = 0n
    for (;;) {
      const b = this.uint8()
      if (shift > 63n) throw new DecodeFailure("varlong too long", this.pos)
      result |= BigInt(b & 0x7f) << shift
      if ((b & 0x80) === 0) break
      shift += 7n
    }
    return BigInt.asIntN(64, (result >> 1n) ^ -(result & 1n))
  }
  uuid(): string {
    const p = this.need(16)
    return uuidToString(this.buf.subarray(p, p + 16))
  }
  bytes(n: number): Buffer {
    const p = this.need(n)
    return this.buf.subarray(p, p + n)
  }
  utf8(n: number): string {
    const p = this.need(n)
    return n === 0 ? "" : textDecoder.decode(this.buf.subarray(p, p + n))
  }
  /** int16 length, -1 = null */
  string(): string | null {
    const n = this.int16()
    if (n < -1) throw new DecodeFailure(`invalid string length ${n}`, this.pos)
    return n === -1 ? null : this.utf8(n)
  }
  /** uvarint length+1, 0 = null */
  compactString(): string | null {
    const n = this.uvarint()
    return n === 0 ? null : this.utf8(n - 1)
  }
  /** int32 length, -1 = null */
  bytesField(): Buffer | null {
    const n = this.int32()
    if (n < -1) throw new DecodeFailure(`invalid bytes length ${n}`, this.pos)
    return n === -1 ? null : this.bytes(n)
  }
  compactBytes(): Buffer | null {
    const n = this.uvarint()
    return n === 0 ? null : this.bytes(n - 1)
  }
  /** Array length (classic int32 or compact uvarint+1); -1 = null. Bounded by the bytes left. */
  arrayLength(compact: boolean): number {
    const n = compact ? this.uvarint() - 1 : this.int32()
    if (n < -1) throw new DecodeFailure(`invalid array length ${n}`, this.pos)
    if (n > this.remaining) throw new DecodeFailure(`array length ${n} exceeds remaining ${this.remaining}`, this.pos)
    return n
  }
}

/** Kafka's Uuid.toString(): URL-safe base64 of the 16 bytes, no padding (22 characters). */
export const uuidToString = (bytes: Uint8Array): string => Buffer.from(bytes).toString("base64url")

/** Parses Kafka's base64 UUID form; throws on malformed input. */
export const uuidFromString = (s: string): Buffer => {
  const b = Buffer.from(s, "base64url")
  if (b.length !== 16 || s.length !== 22) throw new EncodeFailure(`invalid uuid "${s}"`)
  return b
}

export const ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"

const CHUNK = 16 * 1024
/** Byte blocks at least this large are referenced, not copied. */
const REF_THRESHOLD = 1024

export class Writer {
  private buf: Buffer
  private pos = 0
  private readonly chunks: Buffer[] = []
  private total = 0
  constructor(initial = 256) {
    this.buf = Buffer.allocUnsafe(initial)
  }
  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return
    this.flush()
    if (n > this.buf.length) this.buf = Buffer.allocUnsafe(Math.max(n, CHUNK))
    else if (this.buf.length < CHUNK) this.buf = Buffer.allocUnsafe(CHUNK)
  }
  private flush(): void {
    if (this.pos > 0) {
      this.chunks.push(this.buf.subarray(0, this.pos))
      this.total += this.pos
      this.buf = this.buf.subarray(this.pos)
      this.pos = 0
    }
  }
  int8(v: number): void {
    this.ensure(1)
    this.pos = this.buf.writeInt8(v, this.pos)
  }
  uint8(v: number): void {
    this.ensure(1)
    this.pos = this.buf.writeUInt8(v, this.pos)
  }
  int16(v: number): void {
    this.ensure(2)
    this.pos = this.buf.writeInt16BE(v, this.pos)
  }
  uint16(v: number): void {
    this.ensure(2)
    this.pos = this.buf.writeUInt16BE(v, this.pos)
  }
  int32(v: number): void {
    this.ensure(4)
    this.pos = this.buf.writeInt32BE(v, this.pos)
  }
  uint32(v: number): void {
    this.ensure(4)
    this.pos = this.buf.writeUInt32BE(v, this.pos)
  }
  int64(v: bigint): void {
    this.ensure(8)
    this.pos = this.buf.writeBigInt64BE(BigInt.asIntN(64, v), this.pos)
  }
  float64(v: number): void {
    this.ensure(8)
    this.pos = this.buf.writeDoubleBE(v, this.pos)
  }
  bool(v: boolean): void {
    this.uint8(v ? 1 : 0)
  }
  uvarint(v: number): void {
    this.ensure(5)
    v >>>= 0
    while (v >= 0x80) {
      this.buf[this.pos++] = (v & 0x7f) | 0x80
      v >>>= 7
    }
    this.buf[this.pos++] = v
  }
  varint(v: number): void {
    this.uvarint(((v << 1) ^ (v >> 31)) >>> 0)
  }
  varlong(v: bigint): void {
    let u = BigInt.asUintN(64, (v << 1n) ^ (v >> 63n))
    this.ensure(10)
    while (u >= 0x80n) {
      this.buf[this.pos++] = Number(u & 0x7fn) | 0x80
      u >>= 7n
    }
    this.buf[this.pos++] = Number(u)
  }
  uuid(v: string): void {
    this.raw(uuidFromString(v))
  }
  /** Copies small blocks, references large ones (zero copy for record data). */
  raw(b: Uint8Array): void {
    if (b.length >= REF_THRESHOLD) {
      this.flush()
      const ref = Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.length)
      this.chunks.push(ref)
      this.total += ref.length
      return
    }
    this.ensure(b.length)
    this.buf.set(b, this.pos)
    this.pos += b.length
  }
  string(v: string | null): void {
    if (v === null) return this.int16(-1)
    const len = Buffer.byteLength(v, "utf8")
    if (len > 0x7fff) throw new EncodeFailure(`string of ${len} bytes is longer than 32767`)
    this.int16(len)
    this.utf8(v, len)
  }
  compactString(v: string | null): void {
    if (v === null) return this.uvarint(0)
    const len = Buffer.byteLength(v, "utf8")
    this.uvarint(len + 1)
    this.utf8(v, len)
  }
  private utf8(v: string, len: number): void {
    this.ensure(len)
    this.pos += this.buf.write(v, this.pos, len, "utf8")
  }
  bytesField(v: Uint8Array | null): void {
    if (v === null) return this.int32(-1)
    this.int32(v.length)
    this.raw(v)
  }
  compactBytes(v: Uint8Array | null): void {
    if (v === null) return this.uvarint(0)
    this.uvarint(v.length + 1)
    this.raw(v)
  }
  arrayLength(n: number, compact: boolean): void {
    if (compact) this.uvarint(n + 1)
    else this.int32(n)
  }
  get length(): number {
    return this.total + this.pos
  }
  /** The written bytes as chunks (large byte fields by reference). The writer must not be used after. */
  finishChunks(): Buffer[] {
    this.flush()
    return this.chunks
  }
  /** The written bytes as one buffer (copies when there is more than one chunk). */
  finish(): Buffer {
    const chunks = this.finishChunks()
    return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, this.total)
  }
}
