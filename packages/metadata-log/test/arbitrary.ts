/**
 * Generators of valid metadata record sequences: fast-check draws abstract commands, and a small
 * model of the metadata turns each into the records a controller would write (or none when the
 * command does not apply to the state reached so far).
 */
import { Buffer } from "node:buffer"
import { MetadataRecords, MirrorPartitionState } from "@clustermirror/protocol"
import * as fc from "fast-check"

type MetadataRecord = MetadataRecords.MetadataRecord

export const uuid = (n: number, salt = 0x42): string => {
  const b = Buffer.alloc(16)
  b[0] = salt
  b.writeUInt32BE(n, 12)
  return b.toString("base64url")
}

type Command =
  | { readonly op: "register"; readonly broker: number; readonly fenced: boolean; readonly rack: string | null }
  | { readonly op: "fence" | "unfence" | "unregister"; readonly broker: number }
  | { readonly op: "brokerChange"; readonly broker: number; readonly fenced: number; readonly shutdown: number }
  | { readonly op: "createTopic"; readonly name: number; readonly partitions: number; readonly seed: number }
  | {
      readonly op: "changePartition"
      readonly topic: number
      readonly partition: number
      readonly leader: number
      readonly isrSize: number
      readonly version: number
      readonly bumpTo: number
      readonly replicas: boolean
    }
  | { readonly op: "removeTopic"; readonly topic: number }
  | { readonly op: "mirror"; readonly topic: number; readonly name: string | null; readonly state: number }
  | {
      readonly op: "config"
      readonly type: number
      readonly name: number
      readonly key: string
      readonly value: string | null
    }
  | { readonly op: "feature"; readonly name: string; readonly level: number }
  | { readonly op: "producerIds"; readonly step: number; readonly floor: boolean }
  | { readonly op: "acl"; readonly n: number }
  | { readonly op: "removeAcl"; readonly n: number }
  | {
      readonly op: "scram" | "removeScram"
      readonly user: number
      readonly mechanism: number
      readonly iterations: number
    }
  | {
      readonly op: "quota"
      readonly user: string | null | undefined
      readonly client: string | null | undefined
      readonly key: string
      readonly value: number | null
    }
  | { readonly op: "noop" }

const BROKERS = 5
const NAMES = ["orders", "payments", "clicks", "audit", "events", "logs"]

const w = <A>(weight: number, arbitrary: fc.Arbitrary<A>) => ({ weight, arbitrary })

const command: fc.Arbitrary<Command> = fc.oneof(
  w(
    3,
    fc.record({
      op: fc.constant("register" as const),
      broker: fc.nat(BROKERS - 1),
      fenced: fc.boolean(),
      rack: fc.option(fc.constantFrom("r1", "r2"), { nil: null })
    })
  ),
  fc.record({
    op: fc.constantFrom("fence" as const, "unfence" as const, "unregister" as const),
    broker: fc.nat(BROKERS - 1)
  }),
  fc.record({
    op: fc.constant("brokerChange" as const),
    broker: fc.nat(BROKERS - 1),
    fenced: fc.constantFrom(-1, 0, 1),
    shutdown: fc.constantFrom(0, 1)
  }),
  w(
    3,
    fc.record({
      op: fc.constant("createTopic" as const),
      name: fc.nat(NAMES.length - 1),
      partitions: fc.integer({ min: 1, max: 3 }),
      seed: fc.nat(100)
    })
  ),
  w(
    6,
    fc.record({
      op: fc.constant("changePartition" as const),
      topic: fc.nat(10),
      partition: fc.nat(3),
      leader: fc.integer({ min: -2, max: BROKERS - 1 }),
      isrSize: fc.integer({ min: -1, max: 3 }),
      version: fc.integer({ min: 0, max: 3 }),
      bumpTo: fc.integer({ min: -1, max: 3 }),
      replicas: fc.boolean()
    })
  ),
  fc.record({ op: fc.constant("removeTopic" as const), topic: fc.nat(10) }),
  w(
    2,
    fc.record({
      op: fc.constant("mirror" as const),
      topic: fc.nat(10),
      name: fc.option(fc.constantFrom("east", "west"), { nil: null }),
      state: fc.constantFrom(2, 4, 6, -1)
    })
  ),
  fc.record({
    op: fc.constant("config" as const),
    type: fc.constantFrom(2, 4, 64),
    name: fc.nat(NAMES.length - 1),
    key: fc.constantFrom("retention.ms", "cleanup.policy", "min.insync.replicas"),
    value: fc.option(fc.constantFrom("1", "2", "compact", "delete"), { nil: null })
  }),
  fc.record({
    op: fc.constant("feature" as const),
    name: fc.constantFrom("metadata.version", "mirror.version"),
    level: fc.nat(3)
  }),
  fc.record({ op: fc.constant("producerIds" as const), step: fc.integer({ min: 1, max: 2000 }), floor: fc.boolean() }),
  fc.record({ op: fc.constantFrom("acl" as const, "removeAcl" as const), n: fc.nat(4) }),
  fc.record({
    op: fc.constantFrom("scram" as const, "removeScram" as const),
    user: fc.nat(2),
    mechanism: fc.constantFrom(1, 2),
    iterations: fc.integer({ min: 4096, max: 16384 })
  }),
  fc.record({
    op: fc.constant("quota" as const),
    // undefined: the entity has no such part; null: the type's default.
    user: fc.constantFrom("alice", null, undefined),
    client: fc.constantFrom("q1", null, undefined),
    key: fc.constantFrom("producer_byte_rate", "consumer_byte_rate"),
    value: fc.option(fc.integer({ min: 1, max: 1_000_000 }), { nil: null })
  }),
  fc.constant({ op: "noop" as const })
)

interface Model {
  readonly brokers: Map<number, bigint>
  readonly topics: Array<{ readonly id: string; readonly name: string; readonly partitions: number }>
  readonly acls: Set<number>
  readonly scram: Set<string>
  nextPid: bigint
  topicCounter: number
  epochCounter: bigint
  bumps: number
}

const pick = <A>(xs: ReadonlyArray<A>, i: number): A | undefined => (xs.length === 0 ? undefined : xs[i % xs.length])

const replicasFor = (seed: number, p: number): number[] => {
  const out: number[] = []
  for (let k = 0; out.length < 3 && k < BROKERS * 2; k++) {
    const b = (seed + p + k * 2) % BROKERS
    if (!out.includes(b)) out.push(b)
  }
  return out
}

const toRecords = (m: Model, c: Command): MetadataRecord[] => {
  switch (c.op) {
    case "register": {
      const epoch = ++m.epochCounter
      m.brokers.set(c.broker, epoch)
      return [
        MetadataRecords.make("RegisterBrokerRecord", {
          brokerId: c.broker,
          incarnationId: uuid(Number(epoch), 0x51),
          brokerEpoch: epoch,
          endPoints: [{ name: "PLAINTEXT", host: `b${c.broker}`, port: 9092 + c.broker, securityProtocol: 0 }],
          features: [{ name: "metadata.version", minSupportedVersion: 1, maxSupportedVersion: 25 }],
          rack: c.rack,
          fenced: c.fenced
        })
      ]
    }
    case "fence":
    case "unfence": {
      const epoch = m.brokers.get(c.broker)
      if (epoch === undefined) return []
      const type = c.op === "fence" ? "FenceBrokerRecord" : "UnfenceBrokerRecord"
      return [MetadataRecords.make(type, { id: c.broker, epoch })]
    }
    case "unregister": {
      const epoch = m.brokers.get(c.broker)
      if (epoch === undefined) return []
      m.brokers.delete(c.broker)
      return [MetadataRecords.make("UnregisterBrokerRecord", { brokerId: c.broker, brokerEpoch: epoch })]
    }
    case "brokerChange": {
      const epoch = m.brokers.get(c.broker)
      if (epoch === undefined) return []
      return [
        MetadataRecords.make("BrokerRegistrationChangeRecord", {
          brokerId: c.broker,
          brokerEpoch: epoch,
          fenced: c.fenced,
          inControlledShutdown: c.shutdown
        })
      ]
    }
    case "createTopic": {
      const name = NAMES[c.name]!
      if (m.topics.some((t) => t.name === name)) return []
      const id = uuid(++m.topicCounter)
      m.topics.push({ id, name, partitions: c.partitions })
      const out: MetadataRecord[] = [MetadataRecords.make("TopicRecord", { name, topicId: id })]
      for (let p = 0; p < c.partitions; p++) {
        const replicas = replicasFor(c.seed, p)
        out.push(
          MetadataRecords.make("PartitionRecord", {
            partitionId: p,
            topicId: id,
            replicas,
            isr: replicas,
            leader: replicas[0]!,
            leaderEpoch: 0,
            partitionEpoch: 0
          })
        )
      }
      return out
    }
    case "changePartition": {
      const t = pick(m.topics, c.topic)
      if (t === undefined) return []
      const isr = c.isrSize < 0 ? null : [0, 1, 2, 3, 4].slice(0, c.isrSize)
      return [
        MetadataRecords.make(
          "PartitionChangeRecord",
          {
            partitionId: c.partition % t.partitions,
            topicId: t.id,
            leader: c.leader,
            isr,
            replicas: c.replicas ? [0, 1, 2] : null,
            // Explicit epochs only ever grow, each far above what the implicit +1 rule reaches in between.
            leaderEpoch: c.bumpTo < 0 ? -1 : ++m.bumps * 1000 + c.bumpTo
          },
          c.version
        )
      ]
    }
    case "removeTopic": {
      const i = m.topics.length === 0 ? -1 : c.topic % m.topics.length
      if (i < 0) return []
      const [t] = m.topics.splice(i, 1)
      return [MetadataRecords.make("RemoveTopicRecord", { topicId: t!.id })]
    }
    case "mirror": {
      const t = pick(m.topics, c.topic)
      if (t === undefined) return []
      const state = MirrorPartitionState.fromByte(c.state)
      if (state._tag === "None") return []
      return [MetadataRecords.mirrorTopicStateChange(t.id, c.name, state.value)]
    }
    case "config":
      return [
        MetadataRecords.make("ConfigRecord", {
          resourceType: c.type,
          resourceName: NAMES[c.name]!,
          name: c.key,
          value: c.value
        })
      ]
    case "feature":
      return [MetadataRecords.make("FeatureLevelRecord", { name: c.name, featureLevel: c.level })]
    case "producerIds":
      m.nextPid = (m.nextPid < 0n ? 0n : m.nextPid) + BigInt(c.step)
      // A floor (broker id -1) moves the next producer id with it, like a block.
      return [
        MetadataRecords.make("ProducerIdsRecord", {
          brokerId: c.floor ? -1 : 1,
          brokerEpoch: c.floor ? -1n : 5n,
          nextProducerId: m.nextPid
        })
      ]
    case "acl":
      m.acls.add(c.n)
      return [
        MetadataRecords.make("AccessControlEntryRecord", {
          id: uuid(c.n, 0x61),
          resourceType: 2,
          resourceName: `topic-${c.n}`,
          patternType: 3,
          principal: "User:alice",
          host: "*",
          operation: 3,
          permissionType: 3
        })
      ]
    case "removeAcl":
      if (!m.acls.delete(c.n)) return []
      return [MetadataRecords.make("RemoveAccessControlEntryRecord", { id: uuid(c.n, 0x61) })]
    case "scram": {
      m.scram.add(`${c.user}:${c.mechanism}`)
      const bytes = (tag: number) => Buffer.from([c.user, c.mechanism, tag, c.iterations & 0xff])
      return [
        MetadataRecords.make("UserScramCredentialRecord", {
          name: `user-${c.user}`,
          mechanism: c.mechanism,
          salt: bytes(1),
          storedKey: bytes(2),
          serverKey: bytes(3),
          iterations: c.iterations
        })
      ]
    }
    case "removeScram":
      if (!m.scram.delete(`${c.user}:${c.mechanism}`)) return []
      return [
        MetadataRecords.make("RemoveUserScramCredentialRecord", { name: `user-${c.user}`, mechanism: c.mechanism })
      ]
    case "quota": {
      const entity = [
        ...(c.client === undefined ? [] : [{ entityType: "client-id", entityName: c.client }]),
        ...(c.user === undefined ? [] : [{ entityType: "user", entityName: c.user }])
      ]
      if (entity.length === 0) return []
      return [
        MetadataRecords.make("ClientQuotaRecord", {
          entity,
          key: c.key,
          value: c.value ?? 0,
          remove: c.value === null
        })
      ]
    }
    case "noop":
      return [MetadataRecords.make("NoOpRecord", {})]
  }
}

/** The records of a run of commands, starting from the empty metadata. */
export const recordsOf = (commands: ReadonlyArray<Command>): MetadataRecord[] => {
  const m: Model = {
    brokers: new Map(),
    topics: [],
    acls: new Set(),
    scram: new Set(),
    nextPid: -1n,
    topicCounter: 0,
    epochCounter: 0n,
    bumps: 0
  }
  return commands.flatMap((c) => toRecords(m, c))
}

/** A valid record sequence from the empty metadata. */
export const records = (maxCommands = 60): fc.Arbitrary<MetadataRecord[]> =>
  fc.array(command, { minLength: 1, maxLength: maxCommands, size: "max" }).map(recordsOf)

/** A record sequence with cut points: `cuts[i]` ends a batch after record i. */
export const recordsWithCuts = (maxCommands = 60): fc.Arbitrary<{ records: MetadataRecord[]; cuts: boolean[] }> =>
  records(maxCommands).chain((rs) =>
    fc.array(fc.boolean(), { minLength: rs.length, maxLength: rs.length }).map((cuts) => ({ records: rs, cuts }))
  )

/** Splits `xs` after every index whose cut is set. */
export const splitAt = <A>(xs: ReadonlyArray<A>, cuts: ReadonlyArray<boolean>): A[][] => {
  const out: A[][] = []
  let current: A[] = []
  xs.forEach((x, i) => {
    current.push(x)
    if (cuts[i] === true) {
      out.push(current)
      current = []
    }
  })
  if (current.length > 0) out.push(current)
  return out
}
