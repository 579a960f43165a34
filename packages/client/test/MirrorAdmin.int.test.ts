/**
 * The mirror admin calls against our server as a process (a single node is a combined controller and
 * broker), with a second server as the source cluster: the source's topic id and partition count reach
 * the destination, every call's outcome and typed errors.
 */
import { CreateTopics, Errors } from "@clustermirror/protocol"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { ServerProcess } from "@clustermirror/testkit"
import { KafkaError } from "../src/ClientError.js"
import * as ClusterClient from "../src/ClusterClient.js"
import * as MirrorAdmin from "../src/MirrorAdmin.js"

const fastRetry = { attempts: 4, baseMs: 10, maxMs: 50, jitter: 0 }

describe("MirrorAdmin against our server", () => {
  let destination: ServerProcess.ServerHandle
  let source: ServerProcess.ServerHandle
  let client: ClusterClient.Client
  let sourceClient: ClusterClient.Client
  let admin: MirrorAdmin.MirrorAdmin

  beforeAll(async () => {
    ;[destination, source] = await Promise.all([
      ServerProcess.start({ tempPrefix: "cm-mirror-admin-dst-" }),
      ServerProcess.start({ tempPrefix: "cm-mirror-admin-src-" })
    ])
    client = new ClusterClient.Client({ bootstrapServers: [destination.bootstrap], retry: fastRetry })
    sourceClient = new ClusterClient.Client({ bootstrapServers: [source.bootstrap], retry: fastRetry })
    admin = new MirrorAdmin.MirrorAdmin(client)
    const created = await sourceClient.sendToAnyBroker(CreateTopics.api, {
      topics: [{ name: "orders", numPartitions: 3, replicationFactor: 1, assignments: [], configs: [] }],
      timeoutMs: 10_000,
      validateOnly: false
    })
    expect(created.topics.map((t) => t.errorCode)).toEqual([0])
  })
  afterAll(async () => {
    await client?.close()
    await sourceClient?.close()
    await destination?.stop()
    await source?.stop()
  })

  /** The listing once it satisfies `ok`: the broker answers from metadata it follows a moment behind. */
  const listed = async (includeTopicNames: boolean, ok: (l: ReadonlyArray<MirrorAdmin.MirrorListing>) => boolean) => {
    let l = await admin.listClusterMirrors(includeTopicNames)
    for (let i = 0; i < 100 && !ok(l); i++) {
      await new Promise((r) => setTimeout(r, 50))
      l = await admin.listClusterMirrors(includeTopicNames)
    }
    return l
  }

  const rejection = async (p: Promise<unknown>): Promise<KafkaError> => {
    const e = await p.then(
      () => undefined,
      (err: unknown) => err
    )
    if (!(e instanceof KafkaError)) throw new Error(`expected a KafkaError, got ${String(e)}`)
    return e
  }

  it("creates a mirror, reading the source's cluster id from the source, and refuses a second one", async () => {
    await admin.createClusterMirror("dr", new Map([["bootstrap.servers", source.bootstrap]]))
    const sourceClusterId = (await sourceClient.metadata([])).clusterId
    const configs = await admin.describeMirrorConfigs("dr")
    expect(configs.get("bootstrap.servers")).toBe(source.bootstrap)
    expect(configs.get("mirror.source.cluster.id")).toBe(sourceClusterId)
    const again = await rejection(admin.createClusterMirror("dr", new Map([["bootstrap.servers", source.bootstrap]])))
    expect(again.errorCode).toBe(Errors.ErrorCode.CLUSTER_MIRROR_ALREADY_EXISTS)
    expect(again.errorName).toBe("CLUSTER_MIRROR_ALREADY_EXISTS")
  })

  it("starts a topic with the source's topic id and partition count", async () => {
    const results = await admin.startMirrorTopics("dr", ["orders"])
    expect(results.map((r) => [r.name, r.error])).toEqual([["orders", null]])
    const sourceTopic = (await sourceClient.metadata(["orders"])).topics.get("orders")!
    let topic = (await client.metadata(["orders"])).topics.get("orders")
    for (let i = 0; i < 100 && (topic === undefined || topic.errorCode !== 0); i++) {
      await new Promise((r) => setTimeout(r, 50))
      topic = (await client.metadata(["orders"])).topics.get("orders")
    }
    expect(topic?.topicId).toBe(sourceTopic.topicId)
    expect(topic?.partitions.size).toBe(3)
    expect((await admin.sourceTopics("dr", ["orders"])).map((t) => [t.name, t.numPartitions])).toEqual([["orders", 3]])
  })

  it("lists mirrors with and without topic names, following pause and resume", async () => {
    const sourceClusterId = (await sourceClient.metadata([])).clusterId
    expect(await listed(true, (l) => l[0]?.topicCount === 1)).toEqual([
      {
        mirrorName: "dr",
        sourceBootstrap: source.bootstrap,
        sourceClusterId,
        topicCount: 1,
        topicNames: ["orders"]
      }
    ])
    expect((await admin.pauseMirrorTopics("dr", ["orders"])).filter((r) => r.error !== null)).toEqual([])
    const paused = await listed(false, (l) => l[0]?.topicCount === 0)
    expect(paused.map((m) => [m.mirrorName, m.topicCount, m.topicNames])).toEqual([["dr", 0, []]])
    expect((await admin.resumeMirrorTopics("dr", ["orders"])).filter((r) => r.error !== null)).toEqual([])
    expect((await listed(true, (l) => l[0]?.topicCount === 1))[0]?.topicCount).toBe(1)
  })

  it("reports per-topic errors and whole-request errors as KafkaError", async () => {
    const [unknown] = await admin.stopMirrorTopics("elsewhere", ["orders"]).catch((e: unknown) => {
      if (e instanceof KafkaError) return [{ name: "orders", error: e }]
      throw e
    })
    expect(unknown?.error).toBeInstanceOf(KafkaError)
    const notEmpty = await rejection(admin.deleteClusterMirror("dr"))
    expect(notEmpty.errorCode).toBe(Errors.ErrorCode.CLUSTER_MIRROR_NOT_EMPTY)
    const missing = await rejection(admin.deleteClusterMirror("nope"))
    expect(missing.errorName).toBe("UNKNOWN_CLUSTER_MIRROR")
    const described = await rejection(admin.describeMirrorConfigs("nope"))
    expect(described.errorCode).toBe(Errors.ErrorCode.UNKNOWN_CLUSTER_MIRROR)
    await expect(admin.startMirrorTopics("dr", [], { include: ["("] })).rejects.toThrow(/invalid topic pattern/)
  })

  it("stops the topic and deletes the mirror", async () => {
    expect((await admin.stopMirrorTopics("dr", ["orders"])).map((r) => r.error)).toEqual([null])
    await admin.deleteClusterMirror("dr")
    expect(await listed(true, (l) => l.length === 0)).toEqual([])
  })

  it("sends names only when the source cannot be reached", async () => {
    await admin.createClusterMirror(
      "offline",
      new Map([
        ["bootstrap.servers", "127.0.0.1:1"],
        ["mirror.source.cluster.id", "gone"]
      ])
    )
    const results = await admin.startMirrorTopics("offline", ["later"])
    expect(results.map((r) => [r.name, r.error])).toEqual([["later", null]])
    expect((await listed(true, (l) => l.length === 1)).map((m) => m.mirrorName)).toEqual(["offline"])
  })
})
