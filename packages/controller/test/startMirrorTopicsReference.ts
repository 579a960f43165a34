/**
 * The reference StartMirrorTopics decision the property tests compare against: every topic decided in
 * request order against the state every record before it leaves, replayed a topic at a time. Slow
 * (each replay copies the topic maps), but plainly the meaning of a start.
 */
import {
  Errors,
  type MetadataRecords,
  MetadataRecords as MR,
  type StartMirrorTopics,
  Uuid
} from "@clustermirror/protocol"
import { Either } from "effect"
import * as ConfigurationControl from "../src/ConfigurationControl.js"
import type { ApiError } from "../src/ControllerError.js"
import * as ControllerState from "../src/ControllerState.js"
import * as FeatureControl from "../src/FeatureControl.js"
import * as Patterns from "../src/internal/mirrorPatterns.js"
import { validateTopicName } from "../src/internal/topicName.js"
import * as MirrorControl from "../src/MirrorControl.js"
import * as ReplicationControl from "../src/ReplicationControl.js"

const E = Errors.ErrorCode
type Rec = MetadataRecords.MetadataRecord
const INTERNAL = new Set([
  MirrorControl.MIRROR_STATE_TOPIC,
  "__cluster_metadata",
  "__consumer_offsets",
  "__transaction_state"
])
const err = (errorCode: number, errorMessage: string | null = null): ApiError => ({ errorCode, errorMessage })
const NONE = err(E.NONE)

export const referenceStart = (
  state: ControllerState.ControllerState,
  request: StartMirrorTopics.Request,
  ctx: MirrorControl.StartMirrorTopicsContext
): { readonly records: ReadonlyArray<Rec>; readonly response: StartMirrorTopics.Response } => {
  const mirror = request.mirrorName
  const names = request.topics.map((t) => t.topicName)
  const respond = (top: ApiError, results: ReadonlyArray<readonly [string, ApiError]>) => ({
    throttleTimeMs: 0,
    errorCode: top.errorCode,
    errorMessage: top.errorMessage,
    topics: results.map(([name, e]) => ({ name, errorCode: e.errorCode, errorMessage: e.errorMessage }))
  })
  const refuse = (e: ApiError) => ({
    records: [],
    response: respond(
      e,
      [...new Set(names)].map((n) => [n, e] as const)
    )
  })

  if (!FeatureControl.isMirrorEnabled(state.features))
    return refuse(err(E.UNSUPPORTED_VERSION, "Cluster mirroring is disabled: the finalized mirror.version is below 1."))
  if (!ConfigurationControl.mirrorExists(state.configs, mirror))
    return refuse(err(E.UNKNOWN_CLUSTER_MIRROR, `Mirror '${mirror}' not found`))
  if (request.stateValidationOffset >= 0n) {
    const stale = names
      .map((n) => ReplicationControl.topicByName(state.replication, n))
      .find((t) => t !== undefined && t.lastMirrorStateChangeOffset > request.stateValidationOffset)
    if (stale !== undefined)
      return refuse(
        err(
          E.INVALID_CLUSTER_MIRROR_STATES,
          `The mirror state of topic '${stale.name}' changed at offset ${stale.lastMirrorStateChangeOffset}, after the validation at offset ${request.stateValidationOffset}.`
        )
      )
  }
  const bad = [...request.includePatterns, ...request.excludePatterns].find((p) => !Patterns.isValid(p))
  if (bad !== undefined) return refuse(err(E.INVALID_REQUEST, `Invalid topic pattern '${bad}'.`))

  const seen = new Set<string>()
  const twice = new Set<string>()
  for (const n of names) (seen.has(n) ? twice : seen).add(n)
  const candidates = [...seen].filter((n) => !twice.has(n) && validateTopicName(n) === null && !INTERNAL.has(n))
  const current = MirrorControl.topicPatterns(state, mirror)
  const include = Patterns.update(
    Patterns.update(current.include, [...request.includePatterns, ...candidates], []),
    [],
    request.excludePatterns
  )
  const exclude = Patterns.update(
    Patterns.update(current.exclude, [], [...request.includePatterns, ...candidates]),
    request.excludePatterns,
    []
  )
  const inc = Patterns.compile(include)
  const exc = Patterns.compile(exclude)
  if (Either.isLeft(inc) || Either.isLeft(exc)) {
    const [key, p] = Either.isLeft(inc)
      ? [Patterns.INCLUDE, inc.left]
      : [Patterns.EXCLUDE, Either.isLeft(exc) ? exc.left : ""]
    return refuse(err(E.INVALID_CONFIG, `The ${key} of mirror '${mirror}' holds an invalid pattern '${p}'.`))
  }

  let s = state
  let offset = ctx.nextOffset
  const records: Array<Rec> = []
  const append = (rs: ReadonlyArray<Rec>) => {
    for (const r of rs) s = ControllerState.replay(s, r, offset++)
    records.push(...rs)
  }
  const stored = ConfigurationControl.configsOf(state.configs, 64, mirror)
  const effective = (key: string) => stored.get(key) ?? ConfigurationControl.MIRROR_CONFIG_DEFS.get(key)?.default ?? ""
  for (const [key, list] of [
    [Patterns.INCLUDE, include],
    [Patterns.EXCLUDE, exclude]
  ] as const)
    if (Patterns.format(list) !== Patterns.format(Patterns.parse(effective(key))))
      append([
        MR.make("ConfigRecord", { resourceType: 64, resourceName: mirror, name: key, value: Patterns.format(list) })
      ])
  append(
    MirrorControl.topicsOf(s, mirror)
      .filter((t) => t.desiredMirrorState !== 6 && exc.right(t.name))
      .map((t) => MR.mirrorTopicStateChange(t.topicId, mirror, "STOPPED"))
  )

  const one = (t: StartMirrorTopics.Request["topics"][number]): ApiError => {
    const name = t.topicName
    if (twice.has(name)) return err(E.INVALID_REQUEST, "Duplicate topic name.")
    const nameError = validateTopicName(name)
    if (nameError !== null) return err(E.INVALID_TOPIC_EXCEPTION, nameError)
    if (INTERNAL.has(name)) return err(E.INVALID_REQUEST, `Internal topic '${name}' cannot be mirrored.`)
    if (!inc.right(name) || exc.right(name))
      return err(
        E.INVALID_REQUEST,
        `Unable to start the topic '${name}' to mirror because it matches the exclude patterns of mirror '${mirror}'.`
      )
    const existing = ReplicationControl.topicByName(s.replication, name)
    if (existing !== undefined) {
      if (t.topicId !== Uuid.ZERO && t.topicId !== existing.topicId)
        return err(
          E.INCONSISTENT_TOPIC_ID,
          `Topic '${name}' has id ${existing.topicId} here, but the source topic id is ${t.topicId}.`
        )
      if (existing.mirrorName !== null && existing.mirrorName !== mirror && existing.desiredMirrorState !== 6)
        return err(
          E.TOPIC_ALREADY_IN_CLUSTER_MIRROR,
          `Topic '${name}' is already mirrored by mirror '${existing.mirrorName}'.`
        )
      if (existing.mirrorName === mirror && existing.desiredMirrorState === 2) return NONE
      if (existing.mirrorName === mirror && existing.desiredMirrorState !== 6)
        return err(E.MIRROR_TOPIC_NOT_STOPPED, `Topic '${name}' of mirror '${mirror}' is not stopped.`)
      append([MR.mirrorTopicStateChange(existing.topicId, mirror, "MIRRORING")])
      return NONE
    }
    if (t.topicId !== Uuid.ZERO) {
      const holder = ReplicationControl.topicById(s.replication, t.topicId)
      if (holder !== undefined)
        return err(E.TOPIC_ALREADY_EXISTS, `Topic id ${t.topicId} is already used by topic '${holder.name}'.`)
    }
    if (t.numPartitions <= 0) return NONE
    const rf = MirrorControl.destinationReplicationFactor(s, mirror, request.defaultReplicationFactor, ctx)
    let mirrorTopicId = t.topicId
    if (mirrorTopicId === Uuid.ZERO)
      do mirrorTopicId = ctx.newTopicId()
      while (
        Uuid.RESERVED.has(mirrorTopicId) ||
        ReplicationControl.topicById(s.replication, mirrorTopicId) !== undefined
      )
    const created = ReplicationControl.createTopics(
      s.replication,
      {
        topics: [
          {
            name,
            numPartitions: t.numPartitions,
            replicationFactor: rf.replicationFactor,
            assignments: [],
            configs: [],
            mirrorInfo: { topicId: mirrorTopicId }
          }
        ],
        timeoutMs: 0,
        validateOnly: false
      },
      ctx.clusterView,
      {
        newTopicId: ctx.newTopicId,
        defaultPartitions: 1,
        defaultReplicationFactor: ctx.defaultReplicationFactor ?? 1,
        validateConfigs: () => null,
        configRecords: () => []
      }
    )
    const r = created.response[0]!
    if (r.errorCode !== E.NONE)
      return rf.explicit
        ? err(
            r.errorCode,
            `${MirrorControl.REPLICATION_FACTOR_CONFIG}=${rf.replicationFactor} of mirror '${mirror}': ${r.errorMessage ?? Errors.message(r.errorCode)}`
          )
        : err(r.errorCode, r.errorMessage)
    append([...created.records, MR.mirrorTopicStateChange(r.topicId, mirror, "MIRRORING")])
    return err(E.NONE, rf.note)
  }

  const results: Array<readonly [string, ApiError]> = []
  const answered = new Set<string>()
  for (const t of request.topics) {
    if (answered.has(t.topicName)) continue
    answered.add(t.topicName)
    results.push([t.topicName, one(t)])
  }
  return { records, response: respond(results.find(([, e]) => e.errorCode !== E.NONE)?.[1] ?? NONE, results) }
}
