/**
 * Completes a message value from encoder input: every absent field, at any depth, takes its spec
 * default, so factories can accept partial input and still return the decoded value type.
 */
import { defaultValue, type FieldDef, type Fields, type StructInput, type StructType, type TypeDef } from "../Spec.js"

export const withDefaults = <Fs extends Fields>(fields: Fs, input: StructInput<Fs>): StructType<Fs> =>
  fillStruct(fields, input) as StructType<Fs>

const fillStruct = (fields: Fields, input: unknown): Record<string, unknown> => {
  const o = (input ?? {}) as Record<string, unknown>
  const out: Record<string, unknown> = {}
  for (const f of fields) out[f.key] = fillValue(f.type, f, o[f.key])
  return out
}

const fillValue = (t: TypeDef, f: FieldDef, v: unknown): unknown => {
  if (v === undefined) return defaultValue(f)
  if (v === null) return null
  if (t.kind === "struct") return fillStruct(t.fields, v)
  if (t.kind === "array" && t.element.kind === "struct") {
    const fields = t.element.fields
    return (v as ReadonlyArray<unknown>).map((e) => fillStruct(fields, e))
  }
  return v
}
