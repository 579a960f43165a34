/**
 * The mirror admin's fan-outs against scripted brokers: one broker that never answers is a timeout
 * outcome of the fan-out (after the per-broker timeout), not a hang of the whole call.
 */
import { ApiVersions, DescribeClusterMirrors, Metadata } from "@clustermirror/protocol"
import { afterEach, describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import * as ClusterClient from "../src/ClusterClient.js"
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
})
