/**
 * Kafka Streams 4.4 with `processing.guarantee=exactly_once_v2` on our 3-broker cluster, beside the same
 * application on Apache Kafka 4.4: a word count (input → split → groupBy(word) through a repartition topic
 * → count in a changelog-backed store → output) over lines with known word counts.
 *
 * On both clusters: the read_committed output ends with exactly the expected count per word; the
 * changelog topic is compacted; Streams purges the repartition topic (DeleteRecords), so its log start
 * offset moves up to what was consumed; after a clean close, deleting the local state dir and restarting
 * with more input, the store is restored from the changelog and the counts continue from where they were
 * (a store rebuilt from nothing would restart them at the new input's counts).
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import {
  ApacheKafka,
  JavaTools,
  KafkaPeer,
  KafkaStreams,
  Kcat,
  Ports,
  ServerProcess,
  Wait
} from "@clustermirror/testkit"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

const PARTITIONS = 3
const APP = "wordcount"
const INPUT = "lines"
const OUTPUT = "word-counts"
const REPARTITION = `${APP}-words-repartition`
const CHANGELOG = `${APP}-counts-changelog`

const PHASE_1 = KafkaStreams.sampleLines(0, 400)
const PHASE_2 = KafkaStreams.sampleLines(1, 150)

const offsets = (bootstrap: string, topic: string, time: -1 | -2) =>
  Kcat.partitionOffsets(bootstrap, topic, PARTITIONS, time)

/** What the scenario saw on one cluster. */
interface Observed {
  readonly afterFirstRun: Record<string, number>
  readonly afterRestart: Record<string, number>
  readonly internalTopics: ReadonlyArray<string>
  readonly changelogConfigs: string
  /** Log start and end offsets of the repartition topic once Streams purged it during the first run. */
  readonly repartitionStart: ReadonlyArray<number>
  readonly repartitionEnd: ReadonlyArray<number>
  readonly stateDirAfterFirstRun: ReadonlyArray<string>
}

/** Runs the word count twice on the cluster at `bootstrap`, deleting the local state in between. */
const scenario = async (bootstrap: string, replicationFactor: number): Promise<Observed> => {
  const stateDir = mkdtempSync(join(tmpdir(), "cm-streams-state-"))
  const apps: KafkaStreams.WordCountHandle[] = []
  const start = async () => {
    const app = await KafkaStreams.startWordCount({
      bootstrap,
      applicationId: APP,
      inputTopic: INPUT,
      outputTopic: OUTPUT,
      stateDir,
      commitIntervalMs: 200,
      replicationFactor,
      properties: { "repartition.purge.interval.ms": 500 }
    })
    apps.push(app)
    return app
  }
  const countsReach = (app: KafkaStreams.WordCountHandle, expected: Map<string, number>) =>
    KafkaStreams.awaitCounts(app, bootstrap, OUTPUT, expected)
  try {
    for (const topic of [INPUT, OUTPUT])
      JavaTools.expectSuccess(
        "kafka-topics",
        await JavaTools.kafkaTopics([
          "--bootstrap-server",
          bootstrap,
          "--create",
          "--topic",
          topic,
          "--partitions",
          String(PARTITIONS),
          "--replication-factor",
          String(replicationFactor)
        ])
      )
    await Kcat.kcat(["-b", bootstrap, "-P", "-t", INPUT], { input: `${PHASE_1.join("\n")}\n` })

    const first = await start()
    const seen1 = await countsReach(first, KafkaStreams.expectedCounts(PHASE_1))
    // Streams deletes the repartition records it consumed and committed, every purge interval while it runs.
    let repartitionStart: ReadonlyArray<number> = []
    let repartitionEnd: ReadonlyArray<number> = []
    await Wait.eventually(
      "the repartition topic purged",
      async () => {
        repartitionEnd = await offsets(bootstrap, REPARTITION, -1)
        repartitionStart = await offsets(bootstrap, REPARTITION, -2)
        return repartitionStart.every((s, p) => s > 0 || repartitionEnd[p] === 0) ? true : undefined
      },
      60_000,
      500
    ).catch(() => undefined)
    await first.close()
    const afterFirstRun = KafkaStreams.toRecord(await KafkaStreams.readCounts(bootstrap, OUTPUT))
    expect(seen1).toEqual(afterFirstRun)
    const stateDirAfterFirstRun = existsSync(join(stateDir, APP)) ? readdirSync(join(stateDir, APP)).sort() : []

    // The local stores are gone: the restarted application restores them from the changelog.
    rmSync(stateDir, { recursive: true, force: true })
    await Kcat.kcat(["-b", bootstrap, "-P", "-t", INPUT], { input: `${PHASE_2.join("\n")}\n` })
    const second = await start()
    await countsReach(second, KafkaStreams.expectedCounts([...PHASE_1, ...PHASE_2]))
    await second.close()
    const afterRestart = KafkaStreams.toRecord(await KafkaStreams.readCounts(bootstrap, OUTPUT))

    const { stdout: metadata } = await Kcat.kcat(["-b", bootstrap, "-L"])
    const internalTopics = [...metadata.matchAll(/topic "([^"]+)"/g)]
      .map((m) => m[1]!)
      .filter((t) => t.startsWith(`${APP}-`))
      .sort()
    const configs = JavaTools.expectSuccess(
      "kafka-configs",
      await JavaTools.configs([
        "--bootstrap-server",
        bootstrap,
        "--describe",
        "--entity-type",
        "topics",
        "--entity-name",
        CHANGELOG
      ])
    )
    return {
      afterFirstRun,
      afterRestart,
      internalTopics,
      changelogConfigs: configs.stdout,
      repartitionStart,
      repartitionEnd,
      stateDirAfterFirstRun
    }
  } finally {
    await Promise.all(apps.map((a) => a.kill()))
    rmSync(stateDir, { recursive: true, force: true })
  }
}

describe("Kafka Streams exactly_once_v2 word count", () => {
  let kafka: ApacheKafka.KafkaNode | undefined
  let ours: ServerProcess.ServerHandle | undefined
  let oursBootstrap: string

  beforeAll(async () => {
    await Promise.all([KafkaPeer.libs(), KafkaPeer.streamsLibs()])
    const port = await Ports.freePort()
    const started = await Promise.allSettled([
      ApacheKafka.startKafka({
        jvmFlags: ApacheKafka.FAST_START_JVM_FLAGS,
        properties: { ...ApacheKafka.QUICK_SESSION_PROPERTIES, "group.initial.rebalance.delay.ms": 0 }
      }).then((k) => (kafka = k)),
      ServerProcess.start({
        tempPrefix: "cm-streams-",
        port,
        args: ["--embedded", "3"],
        readyLines: 4,
        config: {
          ...ServerProcess.TEST_DEFAULTS,
          "default.replication.factor": 3,
          "offsets.topic.replication.factor": 3,
          "transaction.state.log.replication.factor": 3,
          "transaction.state.log.min.isr": 2,
          "broker.heartbeat.interval.ms": 300
        }
      }).then((s) => (ours = s))
    ])
    for (const r of started) if (r.status === "rejected") throw r.reason
    oursBootstrap = [0, 1, 2].map((i) => `127.0.0.1:${port + i}`).join(",")
    await Wait.eventually("3 brokers in the metadata", async () => {
      const { stdout } = await Kcat.kcat(["-b", oursBootstrap, "-L"])
      return /3 brokers:/.test(stdout) ? true : undefined
    })
  }, 300_000)

  afterAll(async () => {
    await ours?.stop()
    await kafka?.stop()
  })

  it("counts every word exactly once, purges the repartition topic and restores the store from the changelog", async () => {
    const [onOurs, onKafka] = await Promise.all([scenario(oursBootstrap, 3), scenario(kafka!.bootstrap, 1)])
    const phase1 = KafkaStreams.toRecord(KafkaStreams.expectedCounts(PHASE_1))
    const both = KafkaStreams.toRecord(KafkaStreams.expectedCounts([...PHASE_1, ...PHASE_2]))
    // The restart's input shares words with the first phase (a store rebuilt from nothing would count them
    // from zero) and brings new ones.
    const phase2 = KafkaStreams.expectedCounts(PHASE_2)
    expect([...phase2.keys()].filter((w) => w in phase1).length).toBeGreaterThan(0)
    expect([...phase2.keys()].filter((w) => !(w in phase1)).length).toBeGreaterThan(0)

    for (const observed of [onOurs, onKafka]) {
      expect(observed.afterFirstRun).toEqual(phase1)
      expect(observed.afterRestart).toEqual(both)
      expect(observed.internalTopics).toEqual([CHANGELOG, REPARTITION])
      expect(observed.changelogConfigs).toContain("cleanup.policy=compact")
      expect(observed.stateDirAfterFirstRun.length).toBeGreaterThan(0)
      expect(observed.repartitionEnd.every((e) => e > 0)).toBe(true)
      observed.repartitionStart.forEach((s, p) => {
        expect(s).toBeGreaterThan(0)
        expect(s).toBeLessThanOrEqual(observed.repartitionEnd[p]!)
      })
    }
    expect(onOurs.afterRestart).toEqual(onKafka.afterRestart)
    expect(onOurs.internalTopics).toEqual(onKafka.internalTopics)
  }, 400_000)
})
