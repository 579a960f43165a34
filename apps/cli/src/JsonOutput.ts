/**
 * The Schemas of the command's `--json` outputs: each value in the protocol's JSON form of its wire type
 * (`Spec.jsonScalar`: int64 as a number, null kept), so offsets, lags and nullable messages have one defined
 * JSON form. `encode` turns rows into JSON text through them; fields not in a Schema are left out.
 */
import { Spec } from "@clustermirror/protocol"
import { Schema } from "effect"

const int64 = Spec.jsonScalar("int64")
const int32 = Spec.jsonScalar("int32")
const int16 = Spec.jsonScalar("int16")
const string = Spec.jsonScalar("string")

/** A partition of `--describe --json` (DescribeClusterMirrors' partition, with its mirror and topic). */
export const DescribeRow = Schema.Struct({
  mirror: string,
  topic: string,
  partition: int32,
  sourceOffset: int64,
  destinationOffset: int64,
  lag: int64,
  lagTimeMs: int64,
  state: string,
  retryAttempt: int16,
  errorMessage: Schema.NullOr(string)
})

/** A synced partition of a group in `--describe --groups --json`. */
export const GroupSyncOffset = Schema.Struct({
  topic: string,
  partition: int32,
  sourceOffset: int64,
  offset: int64,
  leaderEpoch: int32
})

/** A group of `--describe --groups --json` (its times already in ms as numbers). */
export const GroupSyncStatus = Schema.Struct({
  group: string,
  state: string,
  detail: Schema.NullOr(string),
  timeMs: Schema.Int,
  lastSyncedMs: Schema.Int,
  offsets: Schema.Array(GroupSyncOffset)
})

/** The status of `--describe --acls --json` (times in ms as numbers). */
export const AclSyncStatus = Schema.Struct({
  state: string,
  detail: Schema.NullOr(string),
  timeMs: Schema.Int,
  lastSyncedMs: Schema.Int,
  synced: int32,
  created: int32,
  deleted: int32
})

/** A config of `--describe --configs --json`: a secret's value is null, with `sensitive` true. */
export const ConfigEntry = Schema.Struct({
  name: string,
  value: Schema.NullOr(string),
  sensitive: Schema.Boolean
})

/** `values` as JSON text through `schema`; throws the schema's `ParseError` for a value without a JSON form. */
export const encode = <A, I>(schema: Schema.Schema<A, I>, values: ReadonlyArray<A>): string =>
  JSON.stringify(Schema.encodeSync(Schema.Array(schema))(values))
