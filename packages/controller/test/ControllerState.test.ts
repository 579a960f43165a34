import { describe, expect, it } from "@effect/vitest"
import { MetadataRecords } from "@clustermirror/protocol"
import { Either } from "effect"
import * as fc from "fast-check"
import * as BrokerHeartbeats from "../src/BrokerHeartbeats.js"
import * as ClusterControl from "../src/ClusterControl.js"
import * as ConfigurationControl from "../src/ConfigurationControl.js"
import type { ControllerResult } from "../src/ControllerResult.js"
import * as ControllerState from "../src/ControllerState.js"
import { bootstrap, replayChecked } from "../src/ControllerTest.js"
import * as FeatureControl from "../src/FeatureControl.js"
import * as ProducerIdControl from "../src/ProducerIdControl.js"
import { CLUSTER_ID, heartbeat, registration, SUPPORTED_FEATURES, uuid } from "./clusterFixtures.js"

// ---------------------------------------------------------------------------------------------------
// Random request sequences, decided and replayed the way the runtime does

type Command =
  | { readonly _tag: "Register"; readonly brokerId: number; readonly incarnation: number; readonly variant: number }
  | {
      readonly _tag: "Heartbeat"
      readonly brokerId: number
      readonly staleEpoch: boolean
      readonly caughtUp: boolean
      readonly wantFence: boolean
      readonly wantShutDown: boolean
      readonly hasLeaderships: boolean
      readonly anyBroker: boolean
    }
  | { readonly _tag: "Advance"; readonly ms: number }
  | { readonly _tag: "FenceStale" }
  | { readonly _tag: "Unregister"; readonly brokerId: number }
  | {
      readonly _tag: "Alter"
      readonly legacy: boolean
      readonly validateOnly: boolean
      readonly resources: ReadonlyArray<{
        readonly resourceType: number
        readonly resourceName: string
        readonly configs: ReadonlyArray<{
          readonly name: string
          readonly configOperation: number
          readonly value: string | null
        }>
      }>
    }
  | { readonly _tag: "CreateMirror"; readonly name: string; readonly complete: boolean }
  | { readonly _tag: "DeleteMirror"; readonly name: string }
  | { readonly _tag: "CreateTopic"; readonly name: string }
  | { readonly _tag: "DeleteTopic"; readonly name: string }
  | { readonly _tag: "UpdateFeature"; readonly feature: string; readonly level: number; readonly upgradeType: number }
  | { readonly _tag: "AllocateProducerIds"; readonly brokerId: number; readonly staleEpoch: boolean }

const brokerId = fc.integer({ min: 0, max: 3 })
/** True about one time in five. */
const rarely = fc.nat(4).map((n) => n === 0)
const names = ["orders", "events", "m1", "m2", "", "1", "bad name"]
const keys = [
  "retention.ms",
  "cleanup.policy",
  "min.insync.replicas",
  "num.io.threads",
  "unclean.leader.election.enable",
  "bootstrap.servers",
  "mirror.source.cluster.id",
  "mirror.topics.include",
  "security.protocol",
  "nope"
]
const values = ["1", "-5", "delete", "compact,delete", "true", "x:9092", ".*", "SSL", "", "abc", null]

// Broker commands weigh more: most interesting states need a registration and a few heartbeats.
const command: fc.Arbitrary<Command> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      _tag: fc.constant("Register" as const),
      brokerId,
      incarnation: fc.integer({ min: 0, max: 2 }),
      variant: fc.integer({ min: 0, max: 5 })
    })
  },
  {
    weight: 6,
    arbitrary: fc.record({
      _tag: fc.constant("Heartbeat" as const),
      brokerId,
      staleEpoch: rarely,
      caughtUp: fc.boolean(),
      wantFence: rarely,
      wantShutDown: rarely,
      hasLeaderships: fc.boolean(),
      anyBroker: rarely
    })
  },
  fc.record({ _tag: fc.constant("Advance" as const), ms: fc.integer({ min: 0, max: 12_000 }) }),
  fc.constant({ _tag: "FenceStale" as const }),
  fc.record({ _tag: fc.constant("Unregister" as const), brokerId }),
  fc.record({
    _tag: fc.constant("Alter" as const),
    legacy: fc.boolean(),
    validateOnly: fc.boolean(),
    resources: fc.array(
      fc.record({
        resourceType: fc.constantFrom(2, 4, 64, 8),
        resourceName: fc.constantFrom(...names),
        configs: fc.array(
          fc.record({
            name: fc.constantFrom(...keys),
            configOperation: fc.integer({ min: 0, max: 4 }),
            value: fc.constantFrom(...values)
          }),
          { maxLength: 4 }
        )
      }),
      { maxLength: 3 }
    )
  }),
  fc.record({ _tag: fc.constant("CreateMirror" as const), name: fc.constantFrom("m1", "m2"), complete: fc.boolean() }),
  fc.record({ _tag: fc.constant("DeleteMirror" as const), name: fc.constantFrom("m1", "m2") }),
  fc.record({ _tag: fc.constant("CreateTopic" as const), name: fc.constantFrom("orders", "events") }),
  fc.record({ _tag: fc.constant("DeleteTopic" as const), name: fc.constantFrom("orders", "events") }),
  fc.record({
    _tag: fc.constant("UpdateFeature" as const),
    feature: fc.constantFrom("metadata.version", "mirror.version", "other"),
    level: fc.integer({ min: -1, max: 31 }),
    upgradeType: fc.integer({ min: 0, max: 4 })
  }),
  fc.record({ _tag: fc.constant("AllocateProducerIds" as const), brokerId, staleEpoch: fc.boolean() })
)

interface Runtime {
  readonly state: ControllerState.ControllerState
  readonly log: ReadonlyArray<MetadataRecords.MetadataRecord>
  readonly heartbeats: BrokerHeartbeats.BrokerHeartbeats
  readonly now: number
  readonly topicIds: ReadonlyMap<string, string>
  readonly nextTopic: number
}

const nextOffset = (rt: Runtime): bigint => BigInt(rt.log.length)

/** Heartbeats mostly come from registered brokers; `anyBroker` lets unknown ids in too. */
const heartbeatTarget = (rt: Runtime, cmd: Extract<Command, { _tag: "Heartbeat" }>): number => {
  const ids = [...rt.state.cluster.brokers.keys()].sort((a, b) => a - b)
  return cmd.anyBroker || ids.length === 0 ? cmd.brokerId : ids[cmd.brokerId % ids.length]!
}

const features = (variant: number) =>
  variant === 4
    ? [SUPPORTED_FEATURES[0]!]
    : variant === 5
      ? [{ ...SUPPORTED_FEATURES[1]!, maxSupportedVersion: 0 }, SUPPORTED_FEATURES[0]!]
      : SUPPORTED_FEATURES

/** One decision: what the runtime would ask of the control modules for `cmd`. */
const decide = (rt: Runtime, cmd: Command): Either.Either<ControllerResult<unknown>, unknown> => {
  const s = rt.state
  const epochOf = (id: number) => s.cluster.brokers.get(id)?.epoch ?? 0n
  switch (cmd._tag) {
    case "Register":
      return ClusterControl.registerBroker(
        s.cluster,
        registration(cmd.brokerId, {
          incarnationId: uuid(cmd.brokerId * 10 + cmd.incarnation),
          clusterId: cmd.variant === 3 ? "other" : CLUSTER_ID,
          features: features(cmd.variant)
        }),
        {
          nextBrokerEpoch: nextOffset(rt),
          clusterId: CLUSTER_ID,
          finalizedFeatures: FeatureControl.finalizedFeatures(s.features),
          now: rt.now,
          heartbeats: rt.heartbeats
        }
      )
    case "Heartbeat": {
      const id = heartbeatTarget(rt, cmd)
      const epoch = epochOf(id) + (cmd.staleEpoch ? 1n : 0n)
      return ClusterControl.processHeartbeat(
        s.cluster,
        heartbeat(id, epoch, {
          currentMetadataOffset: cmd.caughtUp ? nextOffset(rt) - 1n : 0n,
          wantFence: cmd.wantFence,
          wantShutDown: cmd.wantShutDown
        }),
        { now: rt.now, metadataOffsetCommitted: nextOffset(rt) - 1n, hasLeaderships: cmd.hasLeaderships }
      )
    }
    case "Advance":
      return Either.right({ records: [], response: undefined })
    case "FenceStale":
      return Either.right(ClusterControl.fenceStaleBrokers(s.cluster, rt.heartbeats, rt.now))
    case "Unregister":
      return ClusterControl.unregisterBroker(s.cluster, cmd.brokerId)
    case "Alter": {
      const ctx = { topicExists: (name: string) => rt.topicIds.has(name) }
      return Either.right(
        cmd.legacy
          ? ConfigurationControl.legacyAlterConfigs(s.configs, cmd.resources, cmd.validateOnly, ctx)
          : ConfigurationControl.incrementalAlterConfigs(s.configs, cmd.resources, cmd.validateOnly, ctx)
      )
    }
    case "CreateMirror": {
      if (ConfigurationControl.mirrorExists(s.configs, cmd.name)) return Either.left("exists")
      const configs = [{ name: "bootstrap.servers", value: "src:9092" }]
      return Either.map(
        ConfigurationControl.createMirrorConfigRecords(
          cmd.name,
          cmd.complete ? [...configs, { name: "mirror.source.cluster.id", value: "c" }] : configs
        ),
        (records) => ({ records, response: undefined })
      )
    }
    case "DeleteMirror":
      return Either.right({
        records: ConfigurationControl.deleteMirrorConfigRecords(s.configs, cmd.name),
        response: undefined
      })
    case "CreateTopic": {
      if (rt.topicIds.has(cmd.name)) return Either.left("exists")
      return Either.right({
        records: [MetadataRecords.make("TopicRecord", { name: cmd.name, topicId: uuid(1000 + rt.nextTopic) })],
        response: undefined
      })
    }
    case "DeleteTopic": {
      const id = rt.topicIds.get(cmd.name)
      if (id === undefined) return Either.left("unknown")
      return Either.right({
        records: [MetadataRecords.make("RemoveTopicRecord", { topicId: id })],
        response: undefined
      })
    }
    case "UpdateFeature":
      return FeatureControl.updateFeatures(
        s.features,
        {
          timeoutMs: 60000,
          featureUpdates: [
            { feature: cmd.feature, maxVersionLevel: cmd.level, upgradeType: cmd.upgradeType, allowDowngrade: false }
          ],
          validateOnly: false
        },
        { brokerSupported: ClusterControl.brokerSupportedFeatures(s.cluster) }
      )
    case "AllocateProducerIds":
      return ProducerIdControl.allocateProducerIds(
        s.producerIds,
        cmd.brokerId,
        epochOf(cmd.brokerId) + (cmd.staleEpoch ? 1n : 0n),
        s.cluster
      )
  }
}

/** Runs commands like the runtime: decide, replay into a candidate (must not die), keep soft state. */
const run = (commands: ReadonlyArray<Command>): Runtime => {
  let rt: Runtime = {
    state: replayChecked(ControllerState.empty, bootstrap, 0n),
    log: bootstrap,
    heartbeats: BrokerHeartbeats.empty,
    now: 0,
    topicIds: new Map(),
    nextTopic: 0
  }
  for (const cmd of commands) {
    const result = decide(rt, cmd)
    if (cmd._tag === "Advance") rt = { ...rt, now: rt.now + cmd.ms }
    if (Either.isLeft(result)) continue
    const { records } = result.right
    const state = replayChecked(rt.state, records, nextOffset(rt))
    let { heartbeats, topicIds, nextTopic } = rt
    if (cmd._tag === "Register") heartbeats = BrokerHeartbeats.touch(heartbeats, cmd.brokerId, rt.now)
    if (cmd._tag === "Heartbeat") heartbeats = BrokerHeartbeats.touch(heartbeats, heartbeatTarget(rt, cmd), rt.now)
    if (cmd._tag === "Unregister") heartbeats = BrokerHeartbeats.remove(heartbeats, cmd.brokerId)
    for (const r of records) {
      if (r.type === "TopicRecord") {
        topicIds = new Map(topicIds).set(r.data.name, r.data.topicId)
        nextTopic++
      }
      if (r.type === "RemoveTopicRecord") topicIds = new Map([...topicIds].filter(([, id]) => id !== r.data.topicId))
    }
    rt = { ...rt, state, log: [...rt.log, ...records], heartbeats, topicIds, nextTopic }
  }
  return rt
}

const commands = fc.array(command, { minLength: 10, maxLength: 80 })

describe("ControllerState properties", () => {
  it("decide then replay never dies", () => {
    fc.assert(
      fc.property(commands, (cmds) => {
        const rt = run(cmds)
        expect(rt.log.length).toBeGreaterThanOrEqual(bootstrap.length)
      }),
      { numRuns: 300 }
    )
  })

  it("replay is deterministic: the log replayed from scratch gives the live state", () => {
    fc.assert(
      fc.property(commands, (cmds) => {
        const rt = run(cmds)
        const once = ControllerState.replayAll(ControllerState.empty, rt.log, 0n)
        const twice = ControllerState.replayAll(ControllerState.empty, rt.log, 0n)
        expect(once).toEqual(rt.state)
        expect(twice).toEqual(once)
      }),
      { numRuns: 200 }
    )
  })

  it("replaying the same records in any batch split gives the same state", () => {
    fc.assert(
      fc.property(
        commands,
        fc.array(fc.integer({ min: 1, max: 8 }), { minLength: 1, maxLength: 40 }),
        (cmds, sizes) => {
          const rt = run(cmds)
          let state = ControllerState.empty
          let offset = 0
          let i = 0
          while (offset < rt.log.length) {
            const size = sizes[i++ % sizes.length]!
            const batch = rt.log.slice(offset, offset + size)
            state = ControllerState.replayAll(state, batch, BigInt(offset))
            offset += batch.length
          }
          expect(state).toEqual(rt.state)
        }
      ),
      { numRuns: 200 }
    )
  })

  it("the log survives its wire encoding: decoded records replay to the same state", () => {
    fc.assert(
      fc.property(commands, (cmds) => {
        const rt = run(cmds)
        const decoded = rt.log.map((r) => Either.getOrThrow(MetadataRecords.decode(MetadataRecords.encode(r))))
        expect(ControllerState.replayAll(ControllerState.empty, decoded, 0n)).toEqual(rt.state)
      }),
      { numRuns: 100 }
    )
  })
})

describe("ControllerState.replay", () => {
  it("sends topic records to replication and configuration, ACLs to their slice, and ignores markers", () => {
    const topic = MetadataRecords.make("TopicRecord", { name: "t", topicId: uuid(5) })
    const s = ControllerState.replayAll(
      ControllerState.empty,
      [
        topic,
        MetadataRecords.make("NoOpRecord", {}),
        MetadataRecords.make("BeginTransactionRecord", { name: "x" }),
        MetadataRecords.make("EndTransactionRecord", {}),
        MetadataRecords.make("AccessControlEntryRecord", {
          id: uuid(6),
          resourceType: 2,
          resourceName: "t",
          patternType: 3,
          principal: "User:a",
          host: "*",
          operation: 3,
          permissionType: 3
        }),
        MetadataRecords.make("RemoveAccessControlEntryRecord", { id: uuid(6) })
      ],
      0n
    )
    expect(s.configs.topicNames.get(uuid(5))).toBe("t")
    expect(s.replication).not.toEqual(ControllerState.empty.replication)
    expect(s.acls.acls.size).toBe(0)
    expect({ ...s, configs: ControllerState.empty.configs, replication: ControllerState.empty.replication }).toEqual(
      ControllerState.empty
    )
  })
})
