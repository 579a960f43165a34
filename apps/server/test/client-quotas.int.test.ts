/**
 * Client quotas end to end with Kafka's own tools, on a controller process and a broker process:
 * `kafka-configs` sets `producer_byte_rate` and `consumer_byte_rate` on client-ids and describes them;
 * `kafka-producer-perf-test` with a quota'd client-id takes at least a generous share of the time the
 * quota allows (0.4 x bytes / rate, generous for the burst the quota window lets through), while a client-id
 * without quota is faster; a console consumer with a quota'd client-id is throttled likewise; the quotas
 * survive a restart of the controller and then of the broker. A producer speaking Produce v3 that never waits
 * out `throttle_time_ms` itself (as clients before KIP-219 do; ours, with the version pinned) gets its answers
 * at once and is held back by the muted connection: what passes the burst takes at least half the time the
 * quota allows. (Validation, the keys refused and the
 * output of `kafka-configs` next to Kafka's own are in api-surface.int.test.ts.)
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { ClusterClient } from "@clustermirror/client"
import { CreateTopics, Produce, RecordBatch } from "@clustermirror/protocol"
import { JavaTools, Wait } from "@clustermirror/testkit"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Cluster, startCluster } from "./harness.js"

const RATE = 20_000
const RECORD_BYTES = 1000
/** 15 s at the quota, of which the first 10 windows' worth (200 KB) may go at once. */
const PRODUCED = 300
/** As many (all the unthrottled producer wrote): 15 s at the quota. */
const CONSUMED = 300
const PERF_JVM = ["-Xshare:auto", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx384m"]

describe("client quotas", () => {
  let cluster: Cluster
  let bootstrap: string
  let dir: string

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "cm-quotas-"))
    fs.writeFileSync(path.join(dir, "payload.txt"), `${"x".repeat(RECORD_BYTES)}\n`)
    cluster = await startCluster({
      brokers: 1,
      controllerConfig: { "default.replication.factor": 1, "num.partitions": 1 },
      brokerConfig: { "offsets.topic.replication.factor": 1, "default.replication.factor": 1, "num.partitions": 1 }
    })
    bootstrap = cluster.brokers[0]!.bootstrap
  }, 180_000)

  afterAll(async () => {
    await cluster?.stop()
    if (dir !== undefined) fs.rmSync(dir, { recursive: true, force: true })
  })

  const configs = (args: ReadonlyArray<string>) => JavaTools.configs(["--bootstrap-server", bootstrap, ...args])
  const describeClients = async () => {
    const r = JavaTools.expectSuccess(
      "kafka-configs --describe",
      await configs(["--describe", "--entity-type", "clients"])
    )
    return JavaTools.lines(r.stdout)
  }
  const producePerf = async (topic: string, clientId: string) => {
    const started = performance.now()
    const r = JavaTools.expectSuccess(
      `kafka-producer-perf-test as ${clientId}`,
      await JavaTools.producerPerf(
        [
          ...["--topic", topic, "--num-records", String(PRODUCED), "--throughput", "-1"],
          ...["--payload-file", path.join(dir, "payload.txt")],
          ...["--producer-props", `bootstrap.servers=${bootstrap}`, `client.id=${clientId}`, "acks=1"]
        ],
        { jvmFlags: PERF_JVM, timeoutMs: 120_000 }
      )
    )
    expect(r.stdout).toContain(`${PRODUCED} records sent`)
    return (performance.now() - started) / 1000
  }

  it("sets, describes and enforces producer and consumer byte rates; they survive controller and broker restarts", async () => {
    for (const [client, quota] of [
      ["q1", `producer_byte_rate=${RATE}`],
      ["c1", `consumer_byte_rate=${RATE}`]
    ] as const) {
      const r = await configs(["--alter", "--add-config", quota, "--entity-type", "clients", "--entity-name", client])
      expect(r.code, r.stdout + r.stderr).toBe(0)
      expect(r.stdout).toContain(`Completed updating config for client ${client}.`)
    }
    const described = [
      `Quota configs for client-id 'c1' are consumer_byte_rate=${RATE}.0`,
      `Quota configs for client-id 'q1' are producer_byte_rate=${RATE}.0`
    ]
    expect([...(await describeClients())].sort()).toEqual(described)
    // Without a quota the producer runs free (this also fills the topic the consumer reads).
    const free = await producePerf("quotas-free", "free")
    // With one, what passes the burst (10 windows x the rate) waits for the rate: at least 0.4 x bytes / rate.
    const [throttled, consumed] = await Promise.all([
      producePerf("quotas-throttled", "q1"),
      (async () => {
        const started = performance.now()
        const c = JavaTools.expectSuccess(
          "kafka-console-consumer as c1",
          await JavaTools.consoleConsumer(
            [
              ...["--bootstrap-server", bootstrap, "--topic", "quotas-free", "--from-beginning"],
              ...["--max-messages", String(CONSUMED), "--timeout-ms", "60000"],
              ...["--consumer-property", "client.id=c1"]
            ],
            { timeoutMs: 120_000 }
          )
        )
        expect(JavaTools.lines(c.stdout).filter((l) => l === "x".repeat(RECORD_BYTES))).toHaveLength(CONSUMED)
        return (performance.now() - started) / 1000
      })()
    ])
    const bytes = (n: number) => n * RECORD_BYTES
    if (process.env.CM_QUOTAS_TIMINGS !== undefined)
      process.stderr.write(`produce free ${free} s, throttled ${throttled} s; consume throttled ${consumed} s\n`)
    expect(throttled).toBeGreaterThanOrEqual((0.4 * bytes(PRODUCED)) / RATE)
    expect(throttled).toBeGreaterThan(free)
    expect(consumed).toBeGreaterThanOrEqual((0.4 * bytes(CONSUMED)) / RATE)

    // The quotas are in the controller's metadata log: a restarted controller, then a restarted broker
    // (which rebuilds its image from the controller), still have them.
    await cluster.controller.restart()
    await Wait.eventually(
      "an alteration through the restarted controller",
      async () => {
        const r = await configs([
          ...[
            "--alter",
            "--add-config",
            "consumer_byte_rate=1000000",
            "--entity-type",
            "clients",
            "--entity-name",
            "c2"
          ]
        ])
        return r.code === 0 ? r : undefined
      },
      30_000,
      500
    )
    await cluster.brokers[0]!.restart()
    expect([...(await describeClients())].sort()).toEqual([
      described[0],
      "Quota configs for client-id 'c2' are consumer_byte_rate=1000000.0",
      described[1]
    ])
  }, 180_000)

  it("holds back a Produce v3 client that does not wait out throttle_time_ms itself by muting its connection", async () => {
    const rate = 10_000
    const requests = 20
    const r = await configs([
      ...["--alter", "--add-config", `producer_byte_rate=${rate}`, "--entity-type", "clients", "--entity-name", "old"]
    ])
    expect(r.code, r.stdout + r.stderr).toBe(0)
    const client = new ClusterClient.Client({
      bootstrapServers: [bootstrap],
      clientId: "old",
      requestTimeoutMs: 60_000
    })
    try {
      const created = await client.sendToAnyBroker(CreateTopics.api, {
        topics: [{ name: "quotas-v3", numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }],
        timeoutMs: 30_000,
        validateOnly: false
      })
      expect(created.topics[0]!.errorCode).toBe(0)
      const leader = await Wait.eventually("a leader of quotas-v3", async () => {
        client.invalidate("quotas-v3")
        return (await client.leaderFor("quotas-v3", 0).catch(() => undefined))?.nodeId
      })
      const throttles: Array<number> = []
      const started = performance.now()
      for (let i = 0; i < requests; i++) {
        const records = RecordBatch.build({
          records: Array.from({ length: 10 }, () => ({ key: null, value: Buffer.alloc(RECORD_BYTES, 120) })),
          timestamp: Date.now()
        })
        const res = await client.sendToNode(
          leader,
          Produce.api,
          {
            transactionalId: null,
            acks: 1,
            timeoutMs: 10_000,
            topicData: [
              { name: "quotas-v3", topicId: "AAAAAAAAAAAAAAAAAAAAAA", partitionData: [{ index: 0, records }] }
            ]
          },
          { version: 3 }
        )
        expect(res.responses[0]!.partitionResponses[0]!.errorCode).toBe(0)
        throttles.push(res.throttleTimeMs)
      }
      const seconds = (performance.now() - started) / 1000
      if (process.env.CM_QUOTAS_TIMINGS !== undefined)
        process.stderr.write(`produce v3 throttled ${seconds} s, throttle_time_ms ${throttles.join(" ")}\n`)
      // The burst passes unthrottled; the requests after it are told their throttle time.
      expect(throttles[0]).toBe(0)
      expect(throttles.filter((t) => t > 0).length).toBeGreaterThanOrEqual(requests / 4)
      // The first 10 windows' worth passes at once, the rest at the rate: half of that time is the bound.
      expect(seconds).toBeGreaterThanOrEqual((0.5 * (requests * 10 * RECORD_BYTES - 10 * rate)) / rate)
    } finally {
      await client.close()
    }
  }, 120_000)
})
