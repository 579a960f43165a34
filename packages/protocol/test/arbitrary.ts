/**
 * fast-check arbitraries derived from message specs: any value a message can carry at a version.
 *
 * Fields absent at the version take their default (that is what decoding yields); tagged fields get
 * any value, default included, since the codec omits defaults and restores them. Arrays are short and
 * shrink with depth so that nested specs stay cheap to generate.
 */
import { Buffer } from "node:buffer"
import * as fc from "fast-check"
import {
  defaultValue,
  type FieldDef,
  type Fields,
  inRange,
  type Message,
  type ScalarKind,
  type TypeDef
} from "../src/Spec.js"

const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n

/** Any 16 bytes, in Kafka's base64url form (so every uuid, including the zero one, can come up). */
export const uuid: fc.Arbitrary<string> = fc
  .uint8Array({ minLength: 16, maxLength: 16 })
  .map((b) => Buffer.from(b).toString("base64url"))

/**
 * Short strings mixing ASCII with multi-byte code points (UTF-8 lengths differ from char counts).
 * Includes a leading U+FEFF, which must survive decoding (Kafka keeps a byte order mark as part of
 * the string).
 */
export const text: fc.Arbitrary<string> = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.string({ unit: "binary", maxLength: 8 }),
  fc.constantFrom("", "é", "日本語", "🙂 topic", "a.b_c-d", "\uFEFFbom")
)

export const bytes: fc.Arbitrary<Uint8Array> = fc.uint8Array({ maxLength: 24 })

const scalar = (kind: ScalarKind): fc.Arbitrary<unknown> => {
  switch (kind) {
    case "int8":
      return fc.integer({ min: -128, max: 127 })
    case "int16":
      return fc.integer({ min: -32768, max: 32767 })
    case "uint16":
      return fc.integer({ min: 0, max: 65535 })
    case "int32":
      return fc.integer({ min: -2147483648, max: 2147483647 })
    case "uint32":
      return fc.integer({ min: 0, max: 4294967295 })
    case "int64":
      return fc.bigInt({ min: INT64_MIN, max: INT64_MAX })
    case "float64":
      return fc.double()
    case "bool":
      return fc.boolean()
    case "uuid":
      return uuid
    case "string":
      return text
    case "bytes":
    case "records":
      return bytes
  }
}

/** Longest array at a nesting depth: top-level arrays hold a few elements, deeper ones at most one. */
const maxLength = (depth: number): number => (depth === 0 ? 3 : depth === 1 ? 2 : 1)

const typed = (t: TypeDef, version: number, depth: number): fc.Arbitrary<unknown> => {
  switch (t.kind) {
    case "struct":
      return struct(t.fields, version, depth)
    case "array":
      return fc.array(typed(t.element, version, depth + 1), { maxLength: maxLength(depth) })
    default:
      return scalar(t.kind)
  }
}

const field = (f: FieldDef, version: number, depth: number): fc.Arbitrary<unknown> => {
  if (!inRange(f.versions, version)) return fc.constant(null).map(() => defaultValue(f))
  const value = typed(f.type, version, depth)
  return inRange(f.nullableVersions, version) ? fc.option(value, { nil: null, freq: 4 }) : value
}

const struct = (fields: Fields, version: number, depth: number): fc.Arbitrary<Record<string, unknown>> => {
  const model: Record<string, fc.Arbitrary<unknown>> = {}
  for (const f of fields) model[f.key] = field(f, version, depth)
  return fc.record(model)
}

/** Any decoded value of `message` at `version` (a union of messages yields the union of their values). */
export const arbitraryFor = <M extends Pick<Message<Fields>, "fields" | "Type">>(
  message: M,
  version: number
): fc.Arbitrary<M["Type"]> =>
  // The walk above is untyped by nature (it follows field definitions at run time); its output has the
  // shape of the message's decoded type by construction.
  struct(message.fields, version, 0) as fc.Arbitrary<M["Type"]>
