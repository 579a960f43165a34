/**
 * The mirror admin's fan-outs against scripted brokers: one broker that never answers is a timeout
 * outcome of the fan-out (after the per-broker timeout), not a hang of the whole call; the failback
 * preview asks every source broker and keeps the largest last mirror epoch.
 */
import {
  type Api,
  ApiVersions,
  DescribeClusterMirrors,
  DescribeConfigs,
  ListOffsets,
  Metadata,
  OffsetForLeaderEpoch,
  type Spec
} from "@clustermirror/protocol"
import { afterEach, describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import * as ClusterClient from "../src/ClusterClient.js"
import type * as MetadataCache from "../src/MetadataCache.js"
import * as MirrorAdmin from "../src/MirrorAdmin.js"
import * as Fake from "./FakeBroker.js"

const fastRetry = { attempts: 2, baseMs: 10, maxMs: 20, jitter: 0 }

/** Two scripted brokers; broker 2 answers ApiVersions and Metadata but never DescribeClusterMirrors. */
const cluster = async () => {
  const ports = new Map<number, number>()
  const brokers = await Promise.all(
    [1, 2].map((id) =>
      Fake.start((req) => {
        if (req.apiKey === ApiVersions.api.key) return Fake.answerApiVersions(req)
        if (req.apiKey === Metadata.api.key)
          return Fake.respond(req, Metadata.api, req.apiVersion, {
            brokers: [1, 2].map((n) => ({ nodeId: n, host: "127.0.0.1", port: ports.get(n)!, rack: null })),
            clusterId: "fake-cluster",
            controllerId: 1,
            topics: []
          })
        if (req.apiKey === DescribeClusterMirrors.api.key && id === 1)
          return Fake.respond(req, DescribeClusterMirrors.api, req.apiVersion, {
            throttleTimeMs: 0,
            errorCode: 0,
            errorMessage: null,
            mirrors: [{ errorCode: 0, mirrorName: "m", topics: [] }]
          })
        // Broker 2: silence.
      })
    )
  )
  for (const [i, b] of brokers.entries()) ports.set(i + 1, b.port)
  return { bootstrap: [`127.0.0.1:${brokers[0]!.port}`], close: () => Promise.all(brokers.map((b) => b.close())) }
}

describe("MirrorAdmin fan-out", () => {
  const cleanups: Array<() => Promise<unknown>> = []
  afterEach(async () => {
    for (const c of cleanups.splice(0)) await c()
  })

  // The request timeout is far beyond the test's own timeout: only the fan-out's timeout ends the call.
  const client = async () => {
    const fake = await cluster()
    const c = new ClusterClient.Client({
      bootstrapServers: fake.bootstrap,
      retry: fastRetry,
      requestTimeoutMs: 600_000,
      fanOutTimeoutMs: 300
    })
    cleanups.push(
      () => fake.close(),
      () => c.close()
    )
    return c
  }

  it("describes the mirrors from the brokers that answered when one never answers", async () => {
    const admin = new MirrorAdmin.MirrorAdmin(await client())
    const described = await admin.describeClusterMirrors(["m"])
    expect(described.mirrors.map((m) => [m.mirrorName, m.errorCode])).toEqual([["m", 0]])
  }, 20_000)

  it("gives the silent broker a RequestTimeout outcome of the fan-out", async () => {
    const c = await client()
    const brokers = [...(await c.metadata([])).brokers.values()].sort((a, b) => a.nodeId - b.nodeId)
    const results = await MirrorAdmin.everyBroker(c, brokers, (b) =>
      c.sendToNode(b.nodeId, DescribeClusterMirrors.api, { mirrorNames: [], includeAuthorizedOperations: false })
    )
    expect(results.map((r) => [r.broker.nodeId, Either.isRight(r.result)])).toEqual([
      [1, true],
      [2, false]
    ])
    const left = results[1]!.result
    expect(Either.isLeft(left) && left.left).toMatchObject({ _tag: "RequestTimeout", api: "fan-out to broker 2" })
  }, 20_000)

  it("previews a failback with the largest last mirror epoch any source broker holds", async () => {
    const source = await sourceCluster([3, 5, -1])
    const destination = new Destination(source.bootstrap)
    cleanups.push(
      () => source.close(),
      () => destination.close()
    )
    const preview = await new MirrorAdmin.MirrorAdmin(destination).previewTruncation("back", ["fb"])
    expect(preview).toEqual([
      { topic: "fb", partition: 0, lastMirrorEpoch: 5, highWatermark: 100n, truncateTo: 0n, recordsCut: 100n }
    ])
  }, 30_000)
})

const TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAg"

/** Source brokers 1..n; broker i reports last mirror epoch `lmes[i - 1]` for fb-0 (-1: none). */
const sourceCluster = async (lmes: ReadonlyArray<number>) => {
  const ids = lmes.map((_, i) => i + 1)
  const ports = new Map<number, number>()
  const brokers = await Promise.all(
    ids.map((id) =>
      Fake.start((req) => {
        if (req.apiKey === ApiVersions.api.key) return Fake.answerApiVersions(req)
        if (req.apiKey === Metadata.api.key)
          return Fake.respond(req, Metadata.api, req.apiVersion, {
            brokers: ids.map((n) => ({ nodeId: n, host: "127.0.0.1", port: ports.get(n)!, rack: null })),
            clusterId: "source",
            controllerId: 1,
            topics: []
          })
        if (req.apiKey === DescribeClusterMirrors.api.key) {
          const asked = Fake.decode(req, DescribeClusterMirrors.api)
          return Fake.respond(req, DescribeClusterMirrors.api, req.apiVersion, {
            throttleTimeMs: 0,
            errorCode: 0,
            errorMessage: null,
            mirrors: [],
            lookupResults: asked.lastMirrorEpochLookups.map((l) => ({
              topicId: l.topicId,
              partitions: l.partitions.map((p) => ({ partitionIndex: p, lastMirrorEpoch: lmes[id - 1]! }))
            }))
          })
        }
      })
    )
  )
  for (const [i, b] of brokers.entries()) ports.set(i + 1, b.port)
  return {
    bootstrap: ids.map((id) => `127.0.0.1:${ports.get(id)!}`).join(","),
    close: () => Promise.all(brokers.map((b) => b.close()))
  }
}

/**
 * The destination without a network: its mirror "back" reads from `sourceBootstrap`; fb-0 ends at 100 and
 * knows no epoch the preview asks about (so the cut, whatever the last mirror epoch, is at 0).
 */
class Destination extends ClusterClient.Client {
  constructor(readonly sourceBootstrap: string) {
    super({ bootstrapServers: ["scripted:9092"] })
  }

  override async metadata(): Promise<MetadataCache.Snapshot> {
    const partition = {
      partition: 0,
      errorCode: 0,
      leaderId: 1,
      leaderEpoch: 0,
      replicas: [1],
      isr: [1],
      offlineReplicas: []
    }
    return {
      clusterId: "destination",
      controllerId: 1,
      brokers: new Map([[1, { nodeId: 1, host: "scripted", port: 9092, rack: null }]]),
      topics: new Map([
        [
          "fb",
          {
            name: "fb",
            topicId: TOPIC_ID,
            errorCode: 0,
            isInternal: false,
            partitions: new Map([[0, partition]]),
            fetchedAt: 1
          }
        ]
      ]),
      fetchedAt: 1
    }
  }

  override async sendToAnyBroker<Req extends Spec.Fields, Res extends Spec.Fields>(
    api: Api.ApiDef<Req, Res>
  ): Promise<Spec.StructType<Res>> {
    if (api.key !== DescribeConfigs.api.key) throw new Error(`unexpected ${api.name}`)
    // Only what the admin reads of the answer.
    const res = {
      results: [
        { errorCode: 0, errorMessage: null, configs: [{ name: "bootstrap.servers", value: this.sourceBootstrap }] }
      ]
    }
    return res as unknown as Spec.StructType<Res>
  }

  override async sendToLeader<Req extends Spec.Fields, Res extends Spec.Fields>(
    _topic: string,
    _partition: number,
    api: Api.ApiDef<Req, Res>
  ): Promise<Spec.StructType<Res>> {
    if (api.key === ListOffsets.api.key)
      return { topics: [{ partitions: [{ offset: 100n, leaderEpoch: 0 }] }] } as unknown as Spec.StructType<Res>
    if (api.key === OffsetForLeaderEpoch.api.key)
      return { topics: [{ partitions: [{ leaderEpoch: -1, endOffset: -1n }] }] } as unknown as Spec.StructType<Res>
    throw new Error(`unexpected ${api.name}`)
  }
}
