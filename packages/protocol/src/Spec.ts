/**
 * The declarative message-spec DSL.
 *
 * A message is a list of fields, each with the versions it exists in, the versions in which it may be
 * null, the versions in which it is tagged (and its tag), a default, and for structs and arrays the
 * nested fields. From one spec this module derives the TypeScript type of the message, its Effect
 * Schema, and, per version, a compiled binary codec (built once, cached). It must not do I/O.
 *
 * Names follow Kafka's JSON specs (PascalCase); values use the camelCase form of each name.
 */
import { Either, ParseResult, Schema } from "effect"
import type { Buffer } from "node:buffer"
import { DecodeFailure, EncodeFailure, Reader, Writer } from "./internal/Bytes.js"
import { DecodeError, EncodeError, InvalidValue } from "./ProtocolError.js"

// ---------------------------------------------------------------------------------------------------
// Version ranges

/** Inclusive version range; `hi` is `Infinity` for "N+", and `lo > hi` for "none". */
export interface VersionRange {
  readonly lo: number
  readonly hi: number
}

export const NONE: VersionRange = { lo: 1, hi: 0 }

/** Parses "0+", "3-7", "5", "none". */
export const parseRange = (s: string): VersionRange => {
  if (s === "none") return NONE
  const plus = /^(\d+)\+$/.exec(s)
  if (plus) return { lo: Number(plus[1]), hi: Number.POSITIVE_INFINITY }
  const span = /^(\d+)-(\d+)$/.exec(s)
  if (span) return { lo: Number(span[1]), hi: Number(span[2]) }
  if (/^\d+$/.test(s)) return { lo: Number(s), hi: Number(s) }
  throw new Error(`invalid version range "${s}"`)
}

export const inRange = (r: VersionRange | null, v: number): boolean => r !== null && v >= r.lo && v <= r.hi

// ---------------------------------------------------------------------------------------------------
// Types

export type ScalarKind =
  | "int8"
  | "int16"
  | "uint16"
  | "int32"
  | "uint32"
  | "int64"
  | "float64"
  | "bool"
  | "uuid"
  | "string"
  | "bytes"
  | "records"

/** Record data: one buffer, or several chunks written back to back (e.g. file slices). */
export type RecordsData = Uint8Array | ReadonlyArray<Uint8Array>

interface ScalarTypes {
  int8: number
  int16: number
  uint16: number
  int32: number
  uint32: number
  int64: bigint
  float64: number
  bool: boolean
  uuid: string
  string: string
  bytes: Uint8Array
  records: RecordsData
}

export type TypeDef =
  | { readonly kind: ScalarKind }
  | { readonly kind: "struct"; readonly fields: ReadonlyArray<AnyField> }
  | { readonly kind: "array"; readonly element: TypeDef }

export interface FieldDef {
  /** Kafka's name, e.g. "PartitionIndex". */
  readonly name: string
  /** The property name in values, e.g. "partitionIndex". */
  readonly key: string
  readonly type: TypeDef
  readonly versions: VersionRange
  readonly nullableVersions: VersionRange | null
  readonly taggedVersions: VersionRange | null
  readonly tag: number | null
  readonly default: unknown
  readonly ignorable: boolean
  readonly mapKey: boolean
}

/** A field whose value type is `A`, stored under property `K`. */
export interface Field<K extends string, A, I = A> extends FieldDef {
  readonly key: K
  readonly _A?: A
  readonly _I?: I
}

// biome-ignore lint/suspicious/noExplicitAny: variance anchor for heterogeneous field lists
export type AnyField = Field<string, any, any>
export type Fields = ReadonlyArray<AnyField>

type Simplify<T> = { [K in keyof T]: T[K] } & {}

/** The decoded value of a struct: every field present. */
export type StructType<Fs extends Fields> = Simplify<{
  // biome-ignore lint/suspicious/noExplicitAny: inference over heterogeneous fields
  readonly [F in Fs[number] as F["key"]]: F extends Field<any, infer A, any> ? A : never
}>

/** What an encoder accepts: every field optional (defaults fill the gaps). */
export type StructInput<Fs extends Fields> = Simplify<{
  // biome-ignore lint/suspicious/noExplicitAny: inference over heterogeneous fields
  readonly [F in Fs[number] as F["key"]]?: F extends Field<any, any, infer I> ? I : never
}>

export interface FieldOptions<A> {
  /** Versions in which the field exists; default "0+". */
  readonly versions?: string
  /** Versions in which the value may be null. */
  readonly nullableVersions?: string
  /** Versions in which the field is tagged (flexible versions only). */
  readonly taggedVersions?: string
  readonly tag?: number
  readonly default?: A | null
  readonly ignorable?: boolean
  /** Map keys are ordinary fields on the wire; kept for documentation. */
  readonly mapKey?: boolean
}

type Nullable<A, O> = O extends { readonly nullableVersions: string } ? A | null : A

const camel = <N extends string>(name: N): Uncapitalize<N> =>
  (name[0]!.toLowerCase() + name.slice(1)) as Uncapitalize<N>

const scalarDefault = (kind: ScalarKind): unknown => {
  switch (kind) {
    case "int64":
      return 0n
    case "bool":
      return false
    case "uuid":
      return "AAAAAAAAAAAAAAAAAAAAAA"
    case "string":
      return ""
    case "bytes":
    case "records":
      return new Uint8Array(0)
    default:
      return 0
  }
}

const makeField = (name: string, type: TypeDef, opts: FieldOptions<unknown> | undefined): FieldDef => {
  const nullableVersions = opts?.nullableVersions ? parseRange(opts.nullableVersions) : null
  const taggedVersions = opts?.taggedVersions ? parseRange(opts.taggedVersions) : null
  if (taggedVersions && opts?.tag === undefined) throw new Error(`tagged field ${name} needs a tag`)
  let def: unknown
  if (opts && "default" in opts && opts.default !== undefined) {
    def = opts.default
    if (type.kind === "int64" && typeof def === "number") def = BigInt(def)
  } else if (nullableVersions && type.kind !== "array") def = null
  else if (type.kind === "array") def = []
  else if (type.kind === "struct") def = null
  else def = scalarDefault(type.kind)
  return {
    name,
    key: camel(name),
    type,
    versions: parseRange(opts?.versions ?? "0+"),
    nullableVersions,
    taggedVersions,
    tag: opts?.tag ?? null,
    default: def,
    ignorable: opts?.ignorable ?? false,
    mapKey: opts?.mapKey ?? false
  }
}

const scalar =
  <K extends ScalarKind>(kind: K) =>
  <const N extends string, const O extends FieldOptions<ScalarTypes[K]> = {}>(
    name: N,
    opts?: O
  ): Field<
    Uncapitalize<N>,
    Nullable<K extends "records" ? Uint8Array : ScalarTypes[K], O>,
    Nullable<ScalarTypes[K], O>
  > =>
    makeField(name, { kind }, opts) as Field<
      Uncapitalize<N>,
      Nullable<K extends "records" ? Uint8Array : ScalarTypes[K], O>,
      Nullable<ScalarTypes[K], O>
    >

export const int8 = scalar("int8")
export const int16 = scalar("int16")
export const uint16 = scalar("uint16")
export const int32 = scalar("int32")
export const uint32 = scalar("uint32")
export const int64 = scalar("int64")
export const float64 = scalar("float64")
export const bool = scalar("bool")
export const uuid = scalar("uuid")
export const string = scalar("string")
export const bytes = scalar("bytes")
/** Record batches: decoded as a zero-copy slice; encoded from one buffer or a list of chunks. */
export const records = scalar("records")

/** A nested struct (not an array). Nullable structs are written with an int8 presence marker. */
export const struct = <const N extends string, const Fs extends Fields, const O extends FieldOptions<never> = {}>(
  name: N,
  fields: Fs,
  opts?: O
): Field<Uncapitalize<N>, Nullable<StructType<Fs>, O>, Nullable<StructInput<Fs>, O>> =>
  makeField(name, { kind: "struct", fields }, opts) as Field<
    Uncapitalize<N>,
    Nullable<StructType<Fs>, O>,
    Nullable<StructInput<Fs>, O>
  >

/** An array of structs (`fields`) or of a scalar kind. */
export function array<const N extends string, const Fs extends Fields, const O extends FieldOptions<never> = {}>(
  name: N,
  fields: Fs,
  opts?: O
): Field<Uncapitalize<N>, Nullable<ReadonlyArray<StructType<Fs>>, O>, Nullable<ReadonlyArray<StructInput<Fs>>, O>>
export function array<
  const N extends string,
  const K extends Exclude<ScalarKind, "records">,
  const O extends FieldOptions<never> = {}
>(
  name: N,
  element: K,
  opts?: O
): Field<Uncapitalize<N>, Nullable<ReadonlyArray<ScalarTypes[K]>, O>, Nullable<ReadonlyArray<ScalarTypes[K]>, O>>
export function array(name: string, element: Fields | ScalarKind, opts?: FieldOptions<never>): FieldDef {
  const el: TypeDef = typeof element === "string" ? { kind: element } : { kind: "struct", fields: element }
  return makeField(name, { kind: "array", element: el }, opts)
}

// ---------------------------------------------------------------------------------------------------
// Messages

export interface MessageOptions<Fs extends Fields> {
  readonly name: string
  /** API key for requests/responses, record type for metadata and coordinator records. */
  readonly apiKey?: number
  readonly type: "request" | "response" | "metadata" | "data" | "header" | "coordinator-key" | "coordinator-value"
  readonly validVersions: string
  readonly flexibleVersions: string
  readonly fields: Fs
}

export interface Codec<A, I> {
  readonly read: (r: Reader) => A
  readonly write: (w: Writer, value: I | undefined) => void
}

export interface Message<Fs extends Fields> {
  readonly name: string
  readonly apiKey: number
  readonly type: MessageOptions<Fs>["type"]
  readonly fields: Fs
  readonly validVersions: VersionRange
  readonly flexibleVersions: VersionRange
  /** Decoded value type (every field present). */
  readonly Type: StructType<Fs>
  /** Encoder input type (every field optional). */
  readonly Input: StructInput<Fs>
  readonly isFlexible: (version: number) => boolean
  /** The compiled codec of a version (built on first use, then cached). */
  readonly codec: (version: number) => Codec<StructType<Fs>, StructInput<Fs>>
  /** Encodes one value at a version into one buffer. */
  readonly encode: (version: number, value: StructInput<Fs>) => Either.Either<Buffer, EncodeError>
  /** Decodes a whole buffer at a version; trailing bytes are an error. */
  readonly decode: (version: number, bytes: Uint8Array) => Either.Either<StructType<Fs>, DecodeError>
  /** The value with every field at its default. */
  readonly empty: StructType<Fs>
  /** The Effect Schema of the decoded value. */
  readonly schema: Schema.Schema<StructType<Fs>>
  /** The Effect Schema of what an encoder accepts: every field optional (the default fills it). */
  readonly inputSchema: Schema.Schema<StructInput<Fs>>
  /**
   * The JSON form of the decoded value (`Schema.encode` gives plain JSON): int64 as a number (a value
   * beyond ±2^53 fails), bytes and records as base64, null kept, the rest as they are (`jsonScalar`).
   */
  readonly jsonSchema: Schema.Schema<StructType<Fs>, unknown>
  /**
   * Checks a value an encoder would accept against `inputSchema` (in any version: per-version rules such
   * as nullability in some versions only stay with the codec); the first misfit as `InvalidValue`.
   */
  readonly validate: (value: StructInput<Fs>) => Either.Either<StructInput<Fs>, InvalidValue>
}

export type TypeOf<M> = M extends Message<infer Fs> ? StructType<Fs> : never
export type InputOf<M> = M extends Message<infer Fs> ? StructInput<Fs> : never

export const message = <const Fs extends Fields>(opts: MessageOptions<Fs>): Message<Fs> => {
  const validVersions = parseRange(opts.validVersions)
  const flexibleVersions = parseRange(opts.flexibleVersions)
  const cache = new Map<number, Codec<StructType<Fs>, StructInput<Fs>>>()
  const codec = (version: number) => {
    let c = cache.get(version)
    if (c === undefined) {
      if (!inRange(validVersions, version)) throw new EncodeFailure(`${opts.name} has no version ${version}`)
      c = compileStruct(opts.fields, version, inRange(flexibleVersions, version)) as Codec<
        StructType<Fs>,
        StructInput<Fs>
      >
      cache.set(version, c)
    }
    return c
  }
  const what = (v: number) => `${opts.name} v${v}`
  let schema: Schema.Schema<StructType<Fs>> | undefined
  let inputSchema: Schema.Schema<StructInput<Fs>> | undefined
  let jsonSchema: Schema.Schema<StructType<Fs>, unknown> | undefined
  let validator: ((u: unknown) => Either.Either<unknown, ParseResult.ParseError>) | undefined
  const getInputSchema = () => {
    inputSchema ??= structSchema(opts.fields, inputScalarSchema, true) as unknown as Schema.Schema<StructInput<Fs>>
    return inputSchema
  }
  let empty: StructType<Fs> | undefined
  return {
    name: opts.name,
    apiKey: opts.apiKey ?? -1,
    type: opts.type,
    fields: opts.fields,
    validVersions,
    flexibleVersions,
    Type: undefined as never,
    Input: undefined as never,
    isFlexible: (v) => inRange(flexibleVersions, v),
    codec,
    encode: (version, value) => {
      try {
        const w = new Writer()
        codec(version).write(w, value)
        return Either.right(w.finish())
      } catch (e) {
        return Either.left(new EncodeError({ message: String((e as Error).message), what: what(version) }))
      }
    },
    decode: (version, bytes) => {
      if (!inRange(validVersions, version))
        return Either.left(new DecodeError({ message: "unsupported version", what: what(version), position: 0 }))
      try {
        const buf = toBuffer(bytes)
        const r = new Reader(buf)
        const value = codec(version).read(r)
        if (r.remaining !== 0)
          return Either.left(
            new DecodeError({ message: `${r.remaining} trailing bytes`, what: what(version), position: r.pos })
          )
        return Either.right(value)
      } catch (e) {
        return Either.left(toDecodeError(e, what(version)))
      }
    },
    get empty() {
      empty ??= defaultStruct(opts.fields) as StructType<Fs>
      return empty
    },
    get schema() {
      schema ??= structSchema(opts.fields, scalarSchema, false) as unknown as Schema.Schema<StructType<Fs>>
      return schema
    },
    get inputSchema() {
      return getInputSchema()
    },
    get jsonSchema() {
      jsonSchema ??= structSchema(opts.fields, jsonScalarSchema, false) as unknown as Schema.Schema<
        StructType<Fs>,
        unknown
      >
      return jsonSchema
    },
    validate: (value) => {
      validator ??= Schema.decodeUnknownEither(getInputSchema() as Schema.Schema<unknown>, { errors: "first" })
      const result = validator(value)
      if (Either.isRight(result)) return Either.right(value)
      const issue = ParseResult.ArrayFormatter.formatErrorSync(result.left)[0]
      return Either.left(
        new InvalidValue({
          what: opts.name,
          field: issue === undefined ? "" : fieldPath(issue.path),
          reason: issue?.message ?? "does not fit the schema"
        })
      )
    }
  }
}

/** A parse issue's path as a field path: "config[0].name". */
const fieldPath = (path: ReadonlyArray<PropertyKey>): string =>
  path.map((k, i) => (typeof k === "number" ? `[${k}]` : i === 0 ? String(k) : `.${String(k)}`)).join("")

/** Maps anything thrown while decoding to a typed error (RangeError from Buffer reads included). */
export const toDecodeError = (e: unknown, what: string): DecodeError =>
  e instanceof DecodeFailure
    ? new DecodeError({ message: e.message, what, position: e.position })
    : new DecodeError({ message: e instanceof Error ? e.message : String(e), what, position: -1 })

const toBuffer = (b: Uint8Array): Buffer =>
  (globalThis.Buffer.isBuffer(b) ? b : globalThis.Buffer.from(b.buffer, b.byteOffset, b.byteLength)) as Buffer

// ---------------------------------------------------------------------------------------------------
// Defaults

export const defaultValue = (f: FieldDef): unknown => {
  if (f.type.kind === "struct" && f.default === null && f.nullableVersions === null) return defaultStruct(f.type.fields)
  if (Array.isArray(f.default)) return []
  return f.default
}

export const defaultStruct = (fields: Fields): Record<string, unknown> => {
  const o: Record<string, unknown> = {}
  for (const f of fields) o[f.key] = defaultValue(f)
  return o
}

const isDefault = (f: FieldDef, v: unknown): boolean => {
  const d = defaultValue(f)
  if (v === d) return true
  if (v === null || d === null) return false
  if (Array.isArray(v)) return v.length === 0 && Array.isArray(d)
  if (v instanceof Uint8Array) return d instanceof Uint8Array && v.length === 0 && d.length === 0
  if (f.type.kind === "struct" && typeof v === "object") {
    const fields = f.type.fields
    return fields.every((sf) => isDefault(sf, (v as Record<string, unknown>)[sf.key] ?? defaultValue(sf)))
  }
  return false
}

// ---------------------------------------------------------------------------------------------------
// Compilation

const compileStruct = (fields: Fields, v: number, flexible: boolean): Codec<unknown, unknown> => {
  const present = fields.filter((f) => inRange(f.versions, v))
  const isTagged = (f: FieldDef) => flexible && inRange(f.taggedVersions, v)
  const regular = present.filter((f) => !isTagged(f)).map((f) => [f, compileField(f, v, flexible)] as const)
  const tagged = present
    .filter(isTagged)
    .sort((a, b) => a.tag! - b.tag!)
    .map((f) => [f, compileField(f, v, flexible)] as const)
  const byTag = new Map(tagged.map(([f, c]) => [f.tag!, [f, c] as const]))
  const absent = fields.filter((f) => !inRange(f.versions, v))
  return {
    read: (r) => {
      const o: Record<string, unknown> = {}
      for (let i = 0; i < regular.length; i++) {
        const [f, c] = regular[i]!
        o[f.key] = c.read(r)
      }
      for (let i = 0; i < absent.length; i++) o[absent[i]!.key] = defaultValue(absent[i]!)
      if (flexible) {
        for (let i = 0; i < tagged.length; i++) o[tagged[i]![0].key] = defaultValue(tagged[i]![0])
        const n = r.uvarint()
        let last = -1
        for (let i = 0; i < n; i++) {
          const tag = r.uvarint()
          if (tag <= last) throw new DecodeFailure(`tagged fields out of order (tag ${tag} after ${last})`, r.pos)
          last = tag
          const size = r.uvarint()
          const sub = r.bytes(size)
          const entry = byTag.get(tag)
          if (entry !== undefined) {
            const sr = new Reader(sub)
            o[entry[0].key] = entry[1].read(sr)
            if (sr.remaining !== 0) throw new DecodeFailure(`tagged field ${entry[0].name} has trailing bytes`, r.pos)
          }
        }
      }
      return o
    },
    write: (w, value) => {
      const o = (value ?? {}) as Record<string, unknown>
      for (let i = 0; i < regular.length; i++) {
        const [f, c] = regular[i]!
        const x = o[f.key]
        c.write(w, x === undefined ? defaultValue(f) : x)
      }
      if (flexible) {
        const out: Array<readonly [FieldDef, Codec<unknown, unknown>, unknown]> = []
        for (let i = 0; i < tagged.length; i++) {
          const [f, c] = tagged[i]!
          const x = o[f.key]
          if (x !== undefined && !isDefault(f, x)) out.push([f, c, x])
        }
        w.uvarint(out.length)
        for (const [f, c, x] of out) {
          const sub = new Writer(64)
          c.write(sub, x)
          const bytes = sub.finish()
          w.uvarint(f.tag!)
          w.uvarint(bytes.length)
          w.raw(bytes)
        }
      }
    }
  }
}

const compileField = (f: FieldDef, v: number, flexible: boolean): Codec<unknown, unknown> => {
  const nullable = inRange(f.nullableVersions, v)
  return compileType(f.type, f, v, flexible, nullable)
}

const nullCheck = (f: FieldDef, v: number): never => {
  throw new EncodeFailure(`${f.name} is not nullable at version ${v}`)
}

const compileType = (
  t: TypeDef,
  f: FieldDef,
  v: number,
  flexible: boolean,
  nullable: boolean
): Codec<unknown, unknown> => {
  switch (t.kind) {
    case "int8":
      return { read: (r) => r.int8(), write: (w, x) => w.int8(x as number) }
    case "int16":
      return { read: (r) => r.int16(), write: (w, x) => w.int16(x as number) }
    case "uint16":
      return { read: (r) => r.uint16(), write: (w, x) => w.uint16(x as number) }
    case "int32":
      return { read: (r) => r.int32(), write: (w, x) => w.int32(x as number) }
    case "uint32":
      return { read: (r) => r.uint32(), write: (w, x) => w.uint32(x as number) }
    case "int64":
      return { read: (r) => r.int64(), write: (w, x) => w.int64(typeof x === "bigint" ? x : BigInt(x as number)) }
    case "float64":
      return { read: (r) => r.float64(), write: (w, x) => w.float64(x as number) }
    case "bool":
      return { read: (r) => r.bool(), write: (w, x) => w.bool(x as boolean) }
    case "uuid":
      return { read: (r) => r.uuid(), write: (w, x) => w.uuid(x as string) }
    case "string":
      return {
        read: (r) => {
          const s = flexible ? r.compactString() : r.string()
          if (s === null && !nullable) throw new DecodeFailure(`${f.name} is null but not nullable`, r.pos)
          return s
        },
        write: (w, x) => {
          if (x === null && !nullable) nullCheck(f, v)
          if (flexible) w.compactString(x as string | null)
          else w.string(x as string | null)
        }
      }
    case "bytes":
      return {
        read: (r) => {
          const b = flexible ? r.compactBytes() : r.bytesField()
          if (b === null && !nullable) throw new DecodeFailure(`${f.name} is null but not nullable`, r.pos)
          return b
        },
        write: (w, x) => {
          if (x === null && !nullable) nullCheck(f, v)
          if (flexible) w.compactBytes(x as Uint8Array | null)
          else w.bytesField(x as Uint8Array | null)
        }
      }
    case "records":
      return {
        read: (r) => {
          const b = flexible ? r.compactBytes() : r.bytesField()
          if (b === null && !nullable) throw new DecodeFailure(`${f.name} is null but not nullable`, r.pos)
          return b
        },
        write: (w, x) => {
          if (x === null) {
            if (!nullable) nullCheck(f, v)
            if (flexible) w.uvarint(0)
            else w.int32(-1)
            return
          }
          const chunks = (x instanceof Uint8Array ? [x] : x) as ReadonlyArray<Uint8Array>
          let len = 0
          for (const c of chunks) len += c.length
          if (flexible) w.uvarint(len + 1)
          else w.int32(len)
          for (const c of chunks) w.raw(c)
        }
      }
    case "struct": {
      const inner = compileStruct(t.fields, v, flexible)
      if (!nullable) return inner
      return {
        read: (r) => (r.int8() < 0 ? null : inner.read(r)),
        write: (w, x) => {
          if (x === null) return w.int8(-1)
          w.int8(1)
          inner.write(w, x)
        }
      }
    }
    case "array": {
      const el = compileType(t.element, f, v, flexible, false)
      return {
        read: (r) => {
          const n = r.arrayLength(flexible)
          if (n === -1) {
            if (!nullable) throw new DecodeFailure(`${f.name} is null but not nullable`, r.pos)
            return null
          }
          const out = new Array(n)
          for (let i = 0; i < n; i++) out[i] = el.read(r)
          return out
        },
        write: (w, x) => {
          if (x === null) {
            if (!nullable) nullCheck(f, v)
            return w.arrayLength(-1, flexible)
          }
          const xs = x as ReadonlyArray<unknown>
          w.arrayLength(xs.length, flexible)
          for (let i = 0; i < xs.length; i++) el.write(w, xs[i])
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// Effect Schema derivation

const Int = (lo: number, hi: number) => Schema.Int.pipe(Schema.between(lo, hi))

const scalarSchema = (kind: ScalarKind): Schema.Schema.Any => {
  switch (kind) {
    case "int8":
      return Int(-128, 127)
    case "int16":
      return Int(-32768, 32767)
    case "uint16":
      return Int(0, 65535)
    case "int32":
      return Int(-2147483648, 2147483647)
    case "uint32":
      return Int(0, 4294967295)
    case "int64":
      return Schema.BigIntFromSelf.pipe(Schema.betweenBigInt(-(2n ** 63n), 2n ** 63n - 1n))
    case "float64":
      return Schema.Number
    case "bool":
      return Schema.Boolean
    case "uuid":
      return Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9_-]{21}[AQgw]$/))
    case "string":
      return Schema.String
    case "bytes":
    case "records":
      return Schema.Uint8ArrayFromSelf
  }
}

/** What an encoder accepts of a scalar: as decoded, except int64 also as a safe integer and records as chunks. */
const inputScalarSchema = (kind: ScalarKind): Schema.Schema.Any => {
  switch (kind) {
    case "int64":
      return Schema.Union(scalarSchema("int64"), Int(Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER))
    case "records":
      return Schema.Union(Schema.Uint8ArrayFromSelf, Schema.Array(Schema.Uint8ArrayFromSelf))
    default:
      return scalarSchema(kind)
  }
}

/** The JSON form of each scalar kind. */
interface JsonScalars {
  int8: Schema.Schema<number>
  int16: Schema.Schema<number>
  uint16: Schema.Schema<number>
  int32: Schema.Schema<number>
  uint32: Schema.Schema<number>
  int64: Schema.Schema<bigint, number>
  float64: Schema.Schema<number>
  bool: Schema.Schema<boolean>
  uuid: Schema.Schema<string>
  string: Schema.Schema<string>
  bytes: Schema.Schema<Uint8Array, string>
  records: Schema.Schema<Uint8Array, string>
}

const jsonScalarSchema = (kind: ScalarKind): Schema.Schema.Any => {
  switch (kind) {
    case "int64":
      return Schema.BigIntFromNumber.pipe(Schema.betweenBigInt(-(2n ** 63n), 2n ** 63n - 1n))
    case "bytes":
    case "records":
      return Schema.Uint8ArrayFromBase64
    default:
      return scalarSchema(kind)
  }
}

/**
 * The JSON form of a scalar kind, as `jsonSchema` writes it: int64 as a number (±2^53 at most), bytes as
 * base64. For views that rename fields of a message (e.g. a command-line tool's JSON output) yet keep the
 * protocol's JSON form of each value.
 */
export const jsonScalar = <K extends ScalarKind>(kind: K): JsonScalars[K] =>
  jsonScalarSchema(kind) as unknown as JsonScalars[K]

type ScalarSchemas = (kind: ScalarKind) => Schema.Schema.Any

const typeSchema = (t: TypeDef, scalars: ScalarSchemas, input: boolean): Schema.Schema.Any => {
  if (t.kind === "struct") return structSchema(t.fields, scalars, input)
  if (t.kind === "array") return Schema.Array(typeSchema(t.element, scalars, input))
  return scalars(t.kind)
}

const structSchema = (fields: Fields, scalars: ScalarSchemas, input: boolean): Schema.Schema.Any => {
  const props: Record<string, Schema.Schema.All | Schema.PropertySignature.All> = {}
  for (const f of fields) {
    const s = typeSchema(f.type, scalars, input)
    const value = f.nullableVersions !== null ? Schema.NullOr(s) : s
    props[f.key] = input ? Schema.optional(value) : value
  }
  return Schema.Struct(props)
}
