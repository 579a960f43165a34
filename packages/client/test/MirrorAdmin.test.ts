/**
 * The mirror admin without a network: the merge of DescribeClusterMirrors answers as a pure function
 * (duplicates during leadership changes, mirror errors against successes, last mirror epochs), and the
 * fan-out, RecoverMirrorTopics and broker configs through a client whose brokers are functions behind
 * the real codecs.
 */
import {
  Api,
  CreateClusterMirror,
  DescribeClusterMirrors,
  DescribeConfigs,
  Errors,
  RecoverMirrorTopics,
  type Spec,
  StartMirrorTopics
} from "@clustermirror/protocol"
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import * as fc from "fast-check"
import {
  ConnectionError,
  InvalidRequest,
  KafkaError,
  NoBrokerAvailable,
  SourceUnreachable
} from "../src/ClientError.js"
import * as ClusterClient from "../src/ClusterClient.js"
import type * as MetadataCache from "../src/MetadataCache.js"
import * as MirrorAdmin from "../src/MirrorAdmin.js"

type Response = DescribeClusterMirrors.Response
type Partition = Response["mirrors"][number]["topics"][number]["partitions"][number]

const node = (nodeId: number): MetadataCache.BrokerNode => ({ nodeId, host: `b${nodeId}`, port: 9092, rack: null })

const partition = (partitionIndex: number, over: Partial<Partition> = {}): Partition => ({
  partitionIndex,
  sourceOffset: 10n,
  destinationOffset: 8n,
  lag: 2n,
  lagTimeMs: 5n,
  stateValue: "MIRRORING",
  retryAttempt: 0,
  errorMessage: null,
  ...over
})

const response = (over: Partial<Response> = {}): Response => ({
  throttleTimeMs: 0,
  errorCode: 0,
  errorMessage: null,
  mirrors: [],
  lookupResults: [],
  ...over
})

const mirror = (
  mirrorName: string,
  topics: Record<string, ReadonlyArray<Partition>>,
  errorCode = 0
): Response["mirrors"][number] => ({
  errorCode,
  mirrorName,
  authorizedOperations: -2147483648,
  topics: Object.entries(topics).map(([topicName, partitions]) => ({ topicName, partitions: [...partitions] })),
  groupSyncStatuses: [],
  aclSyncStatuses: []
})

const answered = (nodeId: number, res: Response): MirrorAdmin.BrokerDescription => ({
  broker: node(nodeId),
  result: Either.right(res)
})

const failed = (nodeId: number, error: unknown): MirrorAdmin.BrokerDescription => ({
  broker: node(nodeId),
  result: Either.left(error)
})

const unreachable = (nodeId: number) =>
  new ConnectionError({ host: `b${nodeId}`, port: 9092, reason: "connect", message: "connection refused" })

describe("MirrorAdmin.mergeDescriptions", () => {
  it("given each broker reporting the partitions it leads, then joins them per mirror, sorted by topic and partition", () => {
    const merged = MirrorAdmin.mergeDescriptions([
      answered(1, response({ mirrors: [mirror("m", { b: [partition(1)], a: [partition(2)] })] })),
      answered(2, response({ mirrors: [mirror("m", { a: [partition(0), partition(1)] }), mirror("k", {})] }))
    ])
    expect(merged.mirrors.map((m) => m.mirrorName)).toEqual(["k", "m"])
    const m = merged.mirrors[1]!
    expect(m.errorCode).toBe(0)
    expect(m.partitions.map((p) => `${p.topic}-${p.partition}`)).toEqual(["a-0", "a-1", "a-2", "b-1"])
    expect(m.partitions[0]).toEqual({
      topic: "a",
      partition: 0,
      sourceOffset: 10n,
      destinationOffset: 8n,
      lag: 2n,
      lagTimeMs: 5n,
      state: "MIRRORING",
      retryAttempt: 0,
      errorMessage: null
    })
  })

  it("given two brokers reporting one partition, then a known state beats UNKNOWN, then the larger destination offset wins", () => {
    const unknownFar = partition(0, { stateValue: "UNKNOWN", destinationOffset: 100n })
    const failedNear = partition(0, {
      stateValue: "FAILED",
      destinationOffset: -1n,
      retryAttempt: 3,
      errorMessage: "x"
    })
    const near = partition(1, { destinationOffset: 5n })
    const far = partition(1, { destinationOffset: 7n })
    for (const order of [
      [1, 2],
      [2, 1]
    ]) {
      const byBroker: Record<number, ReadonlyArray<Partition>> = { 1: [unknownFar, near], 2: [failedNear, far] }
      const merged = MirrorAdmin.mergeDescriptions(
        order.map((n) => answered(n, response({ mirrors: [mirror("m", { t: byBroker[n]! })] })))
      )
      const ps = merged.mirrors[0]!.partitions
      expect(
        ps.map((p) => [p.partition, p.state, p.destinationOffset]),
        `order ${order}`
      ).toEqual([
        [0, "FAILED", -1n],
        [1, "MIRRORING", 7n]
      ])
      expect(ps[0]!.retryAttempt).toBe(3)
      expect(ps[0]!.errorMessage).toBe("x")
    }
  })

  it("given a mirror described by one broker and refused by another, then it is a success; refused by all, the first error", () => {
    const notAuthorized = Errors.ErrorCode.CLUSTER_MIRROR_AUTHORIZATION_FAILED
    const merged = MirrorAdmin.mergeDescriptions([
      answered(1, response({ mirrors: [mirror("ok", {}, notAuthorized), mirror("bad", {}, notAuthorized)] })),
      answered(2, response({ mirrors: [mirror("ok", { t: [partition(0)] }), mirror("bad", {}, 42)] })),
      answered(3, response({ mirrors: [mirror("ok", {}, 42)] }))
    ])
    expect(merged.mirrors.map((m) => [m.mirrorName, m.errorCode, m.partitions.length])).toEqual([
      ["bad", notAuthorized, 0],
      ["ok", 0, 1]
    ])
  })

  it("given last mirror epochs from several brokers, then keeps the largest per topic id and partition", () => {
    const merged = MirrorAdmin.mergeDescriptions([
      answered(
        1,
        response({
          lookupResults: [
            {
              topicId: "T1",
              partitions: [
                { partitionIndex: 0, lastMirrorEpoch: 4 },
                { partitionIndex: 1, lastMirrorEpoch: -1 }
              ]
            }
          ]
        })
      ),
      answered(
        2,
        response({
          lookupResults: [
            {
              topicId: "T1",
              partitions: [
                { partitionIndex: 0, lastMirrorEpoch: 2 },
                { partitionIndex: 1, lastMirrorEpoch: 6 }
              ]
            },
            { topicId: "T2", partitions: [{ partitionIndex: 3, lastMirrorEpoch: -1 }] }
          ]
        })
      ),
      failed(3, unreachable(3))
    ])
    expect([...merged.lastMirrorEpochs].map(([id, ps]) => [id, [...ps].sort(([a], [b]) => a - b)])).toEqual([
      [
        "T1",
        [
          [0, 4],
          [1, 6]
        ]
      ],
      ["T2", [[3, -1]]]
    ])
  })

  it("given failures and top-level errors beside one answer, then merges that answer alone", () => {
    const merged = MirrorAdmin.mergeDescriptions([
      failed(1, unreachable(1)),
      answered(2, response({ errorCode: Errors.ErrorCode.UNSUPPORTED_VERSION, mirrors: [mirror("x", {})] })),
      answered(3, response({ mirrors: [mirror("m", { t: [partition(0)] })] }))
    ])
    expect(merged.mirrors.map((m) => m.mirrorName)).toEqual(["m"])
  })

  it("given no broker answering without an error, then fails with the Kafka error, else the first failure", () => {
    const kafka = (() => {
      try {
        MirrorAdmin.mergeDescriptions([
          failed(1, unreachable(1)),
          answered(2, response({ errorCode: Errors.ErrorCode.UNSUPPORTED_VERSION })),
          answered(3, response({ errorCode: Errors.ErrorCode.UNKNOWN_SERVER_ERROR }))
        ])
      } catch (e) {
        return e
      }
      return null
    })()
    expect(kafka).toBeInstanceOf(KafkaError)
    expect(kafka instanceof KafkaError && kafka.errorName).toBe("UNSUPPORTED_VERSION")
    const first = unreachable(1)
    expect(() => MirrorAdmin.mergeDescriptions([failed(1, first), failed(2, unreachable(2))])).toThrow(first)
    expect(() => MirrorAdmin.mergeDescriptions([])).toThrow(NoBrokerAvailable)
  })

  it("every reported partition appears once, as the best report of it, and epochs are maxima", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            topic: fc.constantFrom("a", "b", "c"),
            partition: fc.integer({ min: 0, max: 3 }),
            state: fc.constantFrom("MIRRORING", "UNKNOWN", "FAILED", "PAUSED"),
            destinationOffset: fc.bigInt({ min: -1n, max: 5n }),
            epoch: fc.integer({ min: -1, max: 9 })
          }),
          { maxLength: 6 }
        ),
        fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 4 }),
        (reports, brokerOf) => {
          const brokers = [...new Set(brokerOf)]
          const perBroker = brokers.map((_, i) => reports.filter((_, j) => j % brokers.length === i))
          const merged = MirrorAdmin.mergeDescriptions(
            perBroker.map((rs, i) =>
              answered(
                brokers[i]!,
                response({
                  mirrors: [
                    mirror(
                      "m",
                      Object.fromEntries(
                        ["a", "b", "c"].map((t) => [
                          t,
                          rs
                            .filter((r) => r.topic === t)
                            .map((r) =>
                              partition(r.partition, { stateValue: r.state, destinationOffset: r.destinationOffset })
                            )
                        ])
                      )
                    )
                  ],
                  lookupResults: rs.map((r) => ({
                    topicId: r.topic,
                    partitions: [{ partitionIndex: r.partition, lastMirrorEpoch: r.epoch }]
                  }))
                })
              )
            )
          )
          const key = (r: { topic: string; partition: number }) => `${r.topic}-${r.partition}`
          const keys = [...new Set(reports.map(key))].sort()
          const out = merged.mirrors[0]!.partitions
          expect(out.map(key)).toEqual(keys)
          const rank = (r: { state: string; destinationOffset: bigint }) => [
            r.state !== "UNKNOWN" ? 1 : 0,
            r.destinationOffset
          ]
          for (const p of out) {
            const best = reports
              .filter((r) => key(r) === key(p))
              .map(rank)
              .reduce((a, b) => (b[0]! > a[0]! || (b[0] === a[0] && b[1]! > a[1]!) ? b : a))
            expect(rank(p)).toEqual(best)
            const epochs = reports.filter((r) => key(r) === key(p)).map((r) => r.epoch)
            expect(merged.lastMirrorEpochs.get(p.topic)?.get(p.partition)).toBe(Math.max(...epochs))
          }
        }
      )
    )
  })
})

// ---------------------------------------------------------------------------------------------------
// A client whose brokers are functions: requests and responses still go through the real codecs.

type Handler = (nodeId: number, frame: Buffer) => Buffer

class ScriptedClient extends ClusterClient.Client {
  metadataRequests = 0
  readonly sent: Array<{ nodeId: number; api: string }> = []
  private readonly handlers = new Map<number, Handler>()

  constructor(readonly nodes: ReadonlyArray<number>) {
    super({ bootstrapServers: ["scripted:9092"] })
  }

  /** Answers `api` on every broker with `answer` (throwing in it is a failed request). */
  answer<Req extends Spec.Fields, Res extends Spec.Fields>(
    api: Api.ApiDef<Req, Res>,
    answer: (nodeId: number, request: Spec.StructType<Req>) => Spec.StructInput<Res>
  ): this {
    this.handlers.set(api.key, (nodeId, frame) => {
      const { header, body } = Either.getOrThrow(Api.decodeRequest(api, frame.subarray(4)))
      const chunks = Either.getOrThrow(
        Api.encodeResponseChunks(api, header.apiVersion, header.correlationId, answer(nodeId, body))
      )
      return Buffer.concat(chunks).subarray(4)
    })
    return this
  }

  override async metadata(): Promise<MetadataCache.Snapshot> {
    this.metadataRequests++
    return {
      clusterId: "dst",
      controllerId: -1,
      brokers: new Map(this.nodes.map((n) => [n, node(n)])),
      topics: new Map(),
      fetchedAt: 1
    }
  }

  override async brokers(): Promise<ReadonlyArray<MetadataCache.BrokerNode>> {
    return this.nodes.map(node)
  }

  override async sendToNode<Req extends Spec.Fields, Res extends Spec.Fields>(
    nodeId: number,
    api: Api.ApiDef<Req, Res>,
    body: Spec.StructInput<Req>
  ): Promise<Spec.StructType<Res>> {
    this.sent.push({ nodeId, api: api.name })
    const handler = this.handlers.get(api.key)
    if (handler === undefined) throw new Error(`no answer scripted for ${api.name}`)
    const request = Either.getOrThrow(Api.encodeRequest(api, api.maxVersion, 7, "test", body))
    return Either.getOrThrow(Api.decodeResponse(api, api.maxVersion, handler(nodeId, request))).body
  }

  override sendToAnyBroker<Req extends Spec.Fields, Res extends Spec.Fields>(
    api: Api.ApiDef<Req, Res>,
    body: Spec.StructInput<Req>
  ): Promise<Spec.StructType<Res>> {
    return this.sendToNode(this.nodes[0]!, api, body)
  }
}

describe("MirrorAdmin over a scripted cluster", () => {
  it("describeClusterMirrors asks every broker of a fresh metadata and merges what answered", async () => {
    const requests: Array<DescribeClusterMirrors.Request> = []
    const client = new ScriptedClient([3, 1, 2]).answer(DescribeClusterMirrors.api, (nodeId, req) => {
      requests.push(req)
      if (nodeId === 2) throw unreachable(2)
      return response({
        mirrors: [mirror("m", { t: [partition(nodeId)] })],
        lookupResults: [
          { topicId: "AAAAAAAAAAAAAAAAAAAAAg", partitions: [{ partitionIndex: 0, lastMirrorEpoch: nodeId }] }
        ]
      })
    })
    const result = await new MirrorAdmin.MirrorAdmin(client).describeClusterMirrors(["m"], {
      clusterId: "src",
      lastMirrorEpochLookups: [{ topicId: "AAAAAAAAAAAAAAAAAAAAAg", partitions: [0] }]
    })
    expect(client.metadataRequests).toBe(1)
    expect(client.sent.map((s) => s.nodeId).sort()).toEqual([1, 2, 3])
    expect(requests[0]).toEqual({
      mirrorNames: ["m"],
      includeAuthorizedOperations: false,
      clusterId: "src",
      lastMirrorEpochLookups: [{ topicId: "AAAAAAAAAAAAAAAAAAAAAg", partitions: [0] }]
    })
    expect(result.mirrors[0]!.partitions.map((p) => p.partition)).toEqual([1, 3])
    expect(result.lastMirrorEpochs.get("AAAAAAAAAAAAAAAAAAAAAg")?.get(0)).toBe(3)
  })

  it("describeClusterMirrors without names asks for every mirror and fails when no broker answers", async () => {
    const names: Array<ReadonlyArray<string>> = []
    const client = new ScriptedClient([1, 2]).answer(DescribeClusterMirrors.api, (_n, req) => {
      names.push(req.mirrorNames)
      return response({ errorCode: Errors.ErrorCode.CLUSTER_AUTHORIZATION_FAILED })
    })
    const error = await new MirrorAdmin.MirrorAdmin(client).describeClusterMirrors([]).catch((e: unknown) => e)
    expect(names).toEqual([[], []])
    expect(error instanceof KafkaError && error.errorName).toBe("CLUSTER_AUTHORIZATION_FAILED")
  })

  it("recoverMirrorTopics returns per-topic outcomes and rejects a refused request", async () => {
    let topLevel = 0
    const client = new ScriptedClient([1]).answer(RecoverMirrorTopics.api, (_n, req) => ({
      throttleTimeMs: 0,
      errorCode: topLevel,
      errorMessage: null,
      topics: req.topics.map((t) => ({
        topicName: t.topicName,
        errorCode: t.topicName === "b" ? Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION : 0,
        errorMessage: null
      }))
    }))
    const admin = new MirrorAdmin.MirrorAdmin(client)
    const results = await admin.recoverMirrorTopics("m", ["a", "b"])
    expect(results.map((r) => [r.name, r.error?.errorName ?? null])).toEqual([
      ["a", null],
      ["b", "UNKNOWN_TOPIC_OR_PARTITION"]
    ])
    topLevel = Errors.ErrorCode.UNKNOWN_CLUSTER_MIRROR
    const error = await admin.recoverMirrorTopics("m", ["a"]).catch((e: unknown) => e)
    expect(error instanceof KafkaError && error.errorCode).toBe(Errors.ErrorCode.UNKNOWN_CLUSTER_MIRROR)
  })

  it("recoverMirrorTopics sends AcceptDataLoss only when asked", async () => {
    const sent: Array<boolean> = []
    const client = new ScriptedClient([1]).answer(RecoverMirrorTopics.api, (_n, req) => {
      sent.push(req.acceptDataLoss)
      return { throttleTimeMs: 0, errorCode: 0, errorMessage: null, topics: [] }
    })
    const admin = new MirrorAdmin.MirrorAdmin(client)
    await admin.recoverMirrorTopics("m", ["a"])
    await admin.recoverMirrorTopics("m", ["a"], { acceptDataLoss: true })
    expect(sent).toEqual([false, true])
  })

  it("describeBrokerConfigs asks a broker about itself", async () => {
    const asked: Array<{ nodeId: number; type: number; name: string }> = []
    const client = new ScriptedClient([4, 5]).answer(DescribeConfigs.api, (nodeId, req) => ({
      throttleTimeMs: 0,
      results: req.resources.map((r) => {
        asked.push({ nodeId, type: r.resourceType, name: r.resourceName })
        return {
          errorCode: 0,
          errorMessage: null,
          resourceType: r.resourceType,
          resourceName: r.resourceName,
          configs: [
            {
              name: "mirror.failed.retry.max.attempts",
              value: "7",
              readOnly: true,
              configSource: 4,
              isDefault: false,
              isSensitive: false,
              synonyms: []
            }
          ]
        }
      })
    }))
    const configs = await new MirrorAdmin.MirrorAdmin(client).describeBrokerConfigs([
      "mirror.failed.retry.max.attempts"
    ])
    expect(asked).toEqual([{ nodeId: 4, type: MirrorAdmin.BROKER_RESOURCE, name: "4" }])
    expect(configs.get("mirror.failed.retry.max.attempts")).toBe("7")
  })
})

describe("MirrorAdmin.withOfflinePartitions", () => {
  const topicInfo = (name: string, leaders: ReadonlyArray<number>): MetadataCache.TopicInfo => ({
    name,
    topicId: "AAAAAAAAAAAAAAAAAAAAAg",
    errorCode: 0,
    isInternal: false,
    fetchedAt: 1,
    partitions: new Map(
      leaders.map((leaderId, p) => [
        p,
        { partition: p, errorCode: 0, leaderId, leaderEpoch: 1, replicas: [], isr: [], offlineReplicas: [] }
      ])
    )
  })
  const snapshot = (topics: ReadonlyArray<MetadataCache.TopicInfo>): MetadataCache.Snapshot => ({
    clusterId: "dst",
    controllerId: -1,
    brokers: new Map([1, 2].map((n) => [n, node(n)])),
    topics: new Map(topics.map((t) => [t.name, t])),
    fetchedAt: 1
  })

  it("given partitions whose leader is -1 or did not answer, then shows them OFFLINE beside the reported ones", () => {
    // Broker 1 answered for t-0; t-1 has no leader; t-2 and all of u are led by broker 3, which is dead.
    const merged = MirrorAdmin.mergeDescriptions([
      answered(1, response({ mirrors: [mirror("m", { t: [partition(0)] })] })),
      failed(3, unreachable(3))
    ])
    const out = MirrorAdmin.withOfflinePartitions(
      merged,
      new Map([["m", ["t", "u"]]]),
      snapshot([topicInfo("t", [1, -1, 3]), topicInfo("u", [3])]),
      new Set([1])
    )
    const rows = out.mirrors[0]!.partitions
    expect(rows.map((p) => [p.topic, p.partition, p.state])).toEqual([
      ["t", 0, "MIRRORING"],
      ["t", 1, "OFFLINE"],
      ["t", 2, "OFFLINE"],
      ["u", 0, "OFFLINE"]
    ])
    expect(rows[1]!.errorMessage).toBe("No leader (leader -1)")
    expect(rows[2]!.errorMessage).toContain("Leader 3")
    expect([rows[1]!.destinationOffset, rows[1]!.sourceOffset, rows[1]!.lag]).toEqual([-1n, -1n, -1n])
  })

  it("given every partition reported or led by a broker that answered, then changes nothing", () => {
    const merged = MirrorAdmin.mergeDescriptions([
      answered(1, response({ mirrors: [mirror("m", { t: [partition(0)] })] }))
    ])
    // t-1 is led by broker 1, which answered without it (e.g. not started yet): not offline.
    const out = MirrorAdmin.withOfflinePartitions(
      merged,
      new Map([["m", ["t"]]]),
      snapshot([topicInfo("t", [1, 1])]),
      new Set([1])
    )
    expect(out).toEqual(merged)
  })
})

describe("MirrorAdmin and an unreachable source", () => {
  it("createClusterMirror fails with where the source is and why, instead of sending a config without its cluster id", async () => {
    const client = new ScriptedClient([1])
    const error = await new MirrorAdmin.MirrorAdmin(client)
      .createClusterMirror("m", new Map([["bootstrap.servers", "127.0.0.1:1"]]))
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(SourceUnreachable)
    expect(error instanceof Error && error.message).toMatch(
      /^cannot reach the source at 127\.0\.0\.1:1: .*ECONNREFUSED/
    )
    expect(client.sent).toEqual([])
  })

  it("createClusterMirror does not look up a source with security configs the cluster will refuse, and sends the config", async () => {
    const sent: Array<ReadonlyArray<string>> = []
    const client = new ScriptedClient([1]).answer(CreateClusterMirror.api, (_n, req) => {
      sent.push(req.config.map((c) => c.name))
      return { throttleTimeMs: 0, errorCode: 0, errorMessage: null }
    })
    await new MirrorAdmin.MirrorAdmin(client).createClusterMirror(
      "m",
      new Map([
        ["bootstrap.servers", "127.0.0.1:1"],
        ["security.protocol", "SASL_SSL"]
      ])
    )
    expect(sent).toEqual([["bootstrap.servers", "security.protocol"]])
  })

  it("createClusterMirror looks the cluster id up with the mirror's security configs, never showing the password", async () => {
    const client = new ScriptedClient([1])
    const secret = "mirror-secret-never-shown"
    const error = await new MirrorAdmin.MirrorAdmin(client)
      .createClusterMirror(
        "m",
        new Map([
          ["bootstrap.servers", "127.0.0.1:1"],
          ["security.protocol", "SASL_PLAINTEXT"],
          ["sasl.mechanism", "SCRAM-SHA-512"],
          [
            "sasl.jaas.config",
            `org.apache.kafka.common.security.scram.ScramLoginModule required username="m" password="${secret}";`
          ]
        ])
      )
      .catch((e: unknown) => e)
    expect(error).toBeInstanceOf(SourceUnreachable)
    expect(error instanceof Error && error.message).toMatch(/^cannot reach the source at 127\.0\.0\.1:1: /)
    expect(error instanceof Error && error.message).not.toContain(secret)
    expect(client.sent).toEqual([])
  })

  it("createClusterMirror names the key and the path of a file this host cannot read", async () => {
    const client = new ScriptedClient([1])
    const error = await new MirrorAdmin.MirrorAdmin(client)
      .createClusterMirror(
        "m",
        new Map([
          ["bootstrap.servers", "127.0.0.1:1"],
          ["security.protocol", "SSL"],
          ["ssl.truststore.type", "PEM"],
          ["ssl.truststore.location", "/nowhere/ca.pem"]
        ])
      )
      .catch((e: unknown) => e)
    expect(error instanceof Error && error.message).toBe(
      "cannot reach the source at 127.0.0.1:1: ssl.truststore.location: cannot read /nowhere/ca.pem (ENOENT) (set mirror.source.cluster.id to create the mirror without asking the source)"
    )
    expect(client.sent).toEqual([])
  })

  it("a mirror whose source needs a secret the cluster does not return: the source cannot be asked from here", async () => {
    const described = [
      ["bootstrap.servers", "127.0.0.1:1", false],
      ["security.protocol", "SASL_SSL", false],
      ["sasl.mechanism", "PLAIN", false],
      ["sasl.jaas.config", null, true]
    ] as const
    const client = new ScriptedClient([1])
      .answer(DescribeConfigs.api, (_n, req) => ({
        throttleTimeMs: 0,
        results: req.resources.map((r) => ({
          errorCode: 0,
          errorMessage: null,
          resourceType: r.resourceType,
          resourceName: r.resourceName,
          configs: described.map(([name, value, isSensitive]) => ({
            name,
            value,
            readOnly: false,
            configSource: 2,
            isDefault: false,
            isSensitive,
            synonyms: []
          }))
        }))
      }))
      .answer(StartMirrorTopics.api, (_n, req) => ({
        throttleTimeMs: 0,
        errorCode: 0,
        errorMessage: null,
        topics: req.topics.map((t) => ({ name: t.topicName, errorCode: 0, errorMessage: null }))
      }))
    const admin = new MirrorAdmin.MirrorAdmin(client)
    const error = await admin.sourceAccess("m").catch((e: unknown) => e)
    expect(error).toBeInstanceOf(SourceUnreachable)
    expect(error instanceof Error && error.message).toBe(
      "cannot reach the source at 127.0.0.1:1: mirror m connects over SASL_SSL with secrets the cluster does not return (sasl.jaas.config), so this client cannot connect to the source itself"
    )
    // A start goes by name: the cluster resolves the topic on the source.
    const results = await admin.startMirrorTopics("m", ["orders"])
    expect(results.map((r) => [r.name, r.error, r.source])).toEqual([["orders", null, "unreachable"]])
  })

  it("startMirrorTopics says which topics the source has, lacks, or could not be asked about", async () => {
    const client = new ScriptedClient([1]).answer(StartMirrorTopics.api, (_n, req) => ({
      throttleTimeMs: 0,
      errorCode: 0,
      errorMessage: null,
      topics: req.topics.map((t) => ({ name: t.topicName, errorCode: 0, errorMessage: null }))
    }))
    const results = await new MirrorAdmin.MirrorAdmin(client).startMirrorTopics("m", ["later"], {
      sourceBootstrap: "127.0.0.1:1"
    })
    expect(results.map((r) => [r.name, r.error, r.source])).toEqual([["later", null, "unreachable"]])
    expect(results[0]!.sourceError?.message).toMatch(/cannot reach the source at 127\.0\.0\.1:1/)
  })
})

describe("mergeGroupSync", () => {
  type Status = Response["mirrors"][number]["groupSyncStatuses"][number]
  const status = (groupId: string, state: string, timeMs: bigint, offset = 5n): Status => ({
    groupId,
    state,
    detail: null,
    timeMs,
    lastSyncedMs: timeMs,
    offsets: [{ topicName: "t", partitionIndex: 0, sourceOffset: offset, offset, leaderEpoch: 1 }]
  })
  const withGroups = (name: string, statuses: ReadonlyArray<Status>) => ({
    ...mirror(name, {}),
    groupSyncStatuses: [...statuses]
  })

  it("takes the statuses of the broker that has them, the newer one per group when two do", () => {
    const merged = MirrorAdmin.mergeGroupSync("dr", [
      answered(1, response({ mirrors: [withGroups("dr", [])] })),
      answered(
        2,
        response({ mirrors: [withGroups("dr", [status("b", "SYNCED", 10n), status("a", "FILTERED", 10n)])] })
      ),
      answered(3, response({ mirrors: [withGroups("dr", [status("b", "CLAMPED", 20n, 7n)])] })),
      failed(4, new Error("down"))
    ])
    expect(merged.map((g) => [g.group, g.state, g.timeMs])).toEqual([
      ["a", "FILTERED", 10],
      ["b", "CLAMPED", 20]
    ])
    expect(merged[1]!.offsets).toEqual([{ topic: "t", partition: 0, sourceOffset: 7n, offset: 7n, leaderEpoch: 1 }])
  })

  it("is empty before a sync, and fails with the mirror's error when no broker described it", () => {
    expect(MirrorAdmin.mergeGroupSync("dr", [answered(1, response({ mirrors: [withGroups("dr", [])] }))])).toEqual([])
    const unknown = Errors.ErrorCode.UNKNOWN_CLUSTER_MIRROR
    expect(() =>
      MirrorAdmin.mergeGroupSync("nope", [answered(1, response({ mirrors: [mirror("nope", {}, unknown)] }))])
    ).toThrow(KafkaError)
  })
})

describe("mergeAclSync", () => {
  const withAcls = (name: string, timeMs: bigint | null, state = "SYNCED") => ({
    ...mirror(name, {}),
    aclSyncStatuses:
      timeMs === null
        ? []
        : [
            {
              state,
              detail: state === "FAILED" ? "boom" : null,
              timeMs,
              lastSyncedMs: timeMs,
              synced: 3,
              created: 1,
              deleted: 2
            }
          ]
  })

  it("takes the newest status any broker has, and is undefined before a sync", () => {
    const merged = MirrorAdmin.mergeAclSync("dr", [
      answered(1, response({ mirrors: [withAcls("dr", null)] })),
      answered(2, response({ mirrors: [withAcls("dr", 10n)] })),
      answered(3, response({ mirrors: [withAcls("dr", 20n, "FAILED")] })),
      failed(4, new Error("down"))
    ])
    expect(merged).toEqual({
      state: "FAILED",
      detail: "boom",
      timeMs: 20,
      lastSyncedMs: 20,
      synced: 3,
      created: 1,
      deleted: 2
    })
    expect(MirrorAdmin.mergeAclSync("dr", [answered(1, response({ mirrors: [withAcls("dr", null)] }))])).toBeUndefined()
    const unknown = Errors.ErrorCode.UNKNOWN_CLUSTER_MIRROR
    expect(() =>
      MirrorAdmin.mergeAclSync("nope", [answered(1, response({ mirrors: [mirror("nope", {}, unknown)] }))])
    ).toThrow(KafkaError)
  })
})

describe("MirrorAdmin request bodies", () => {
  const created = () =>
    new ScriptedClient([1]).answer(CreateClusterMirror.api, () => ({
      throttleTimeMs: 0,
      errorCode: 0,
      errorMessage: null
    }))

  it("refuses a mirror name or config that does not fit its message with InvalidRequest naming the field, sending nothing", async () => {
    const client = created()
    const admin = new MirrorAdmin.MirrorAdmin(client)
    const nullName = await admin.createClusterMirror(null as unknown as string, new Map()).catch((e: unknown) => e)
    expect(nullName).toBeInstanceOf(InvalidRequest)
    expect(nullName).toMatchObject({ api: "CreateClusterMirror", field: "mirrorName" })
    expect((nullName as InvalidRequest).message).toMatch(/^CreateClusterMirror: invalid field mirrorName: /)
    const nullConfig = await admin
      .createClusterMirror("m", new Map([[null as unknown as string, "x"]]))
      .catch((e: unknown) => e)
    expect(nullConfig).toMatchObject({ _tag: "InvalidRequest", field: "config[0].name" })
    expect(client.sent).toEqual([])
    // A null config value is allowed by the message (it is nullable) and goes out.
    await admin.createClusterMirror("m", new Map([["mirror.topics.include", null as unknown as string]]))
    expect(client.sent).toEqual([{ nodeId: 1, api: "CreateClusterMirror" }])
  })

  it("refuses an int32 out of range in a describe's lookups before any broker is asked", async () => {
    const client = new ScriptedClient([1, 2])
    const error = await new MirrorAdmin.MirrorAdmin(client)
      .describeClusterMirrors([], {
        clusterId: "src",
        lastMirrorEpochLookups: [{ topicId: "AAAAAAAAAAAAAAAAAAAAAQ", partitions: [2 ** 31] }]
      })
      .catch((e: unknown) => e)
    expect(error).toMatchObject({
      _tag: "InvalidRequest",
      api: "DescribeClusterMirrors",
      field: "lastMirrorEpochLookups[0].partitions[0]"
    })
    expect(client.metadataRequests).toBe(0)
    expect(client.sent).toEqual([])
  })
})
