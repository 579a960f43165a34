/**
 * Storage across restarts and on a failing disk, with real server processes, real files and kcat:
 * - the high watermark survives a SIGKILL: ListOffsets latest answers the pre-kill HW at once after the
 *   restart, before any follower reported its position to the restarted leader;
 * - a torn or damaged last batch after a clean shutdown is cut at the next start with a WARN line and a
 *   metric, everything before it is consumed, and new produces are readable;
 * - a follower whose last batch was damaged at rest cuts it at its next start and fetches the rest from its
 *   leader again, ending with the leader's bytes;
 * - a full disk answers produce with KAFKA_STORAGE_ERROR and a log line, and produce works again once space
 *   returns (a small tmpfs, when this machine lets the test mount one).
 */
import { execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { RecordBatch } from "@clustermirror/protocol"
import { Kcat, Ports, ServerProcess, Wait } from "@clustermirror/testkit"
import { Kafka, logLevel } from "kafkajs"
import { describe, expect, it } from "vitest"
import { startCluster, startServer } from "./harness.js"

/** The directory of partition `<topic>-0` somewhere under `dir`. */
const partitionDir = (dir: string, topic: string): string | undefined => {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue
    const full = path.join(dir, entry.name)
    if (entry.name === `${topic}-0`) return full
    const found = partitionDir(full, topic)
    if (found !== undefined) return found
  }
  return undefined
}

const checkpointedHighWatermark = (dir: string): number =>
  JSON.parse(fs.readFileSync(path.join(dir, "log-state-checkpoint"), "utf8")).highWatermark

/** offset -> value of partition 0 of `topic`, read with CRC checks on. */
const consumeAll = async (
  kcat: (args: ReadonlyArray<string>) => Promise<Kcat.KcatResult>,
  topic: string
): Promise<Array<[number, string]>> => {
  const { stdout } = await kcat([
    "-C",
    "-t",
    topic,
    "-p",
    "0",
    "-o",
    "beginning",
    "-e",
    "-q",
    "-X",
    "check.crcs=true",
    "-f",
    "%o %s\\n"
  ])
  return stdout
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => [Number(l.slice(0, l.indexOf(" "))), l.slice(l.indexOf(" ") + 1)])
}

const lines = (prefix: string, n: number): string[] => Array.from({ length: n }, (_, i) => `${prefix}-${i}`)

describe("the high watermark across a SIGKILL", () => {
  it("ListOffsets latest answers the pre-kill high watermark right after the restart", async () => {
    const topic = "hw-after-crash"
    const port = await Ports.freePort()
    const server = await ServerProcess.start({
      tempPrefix: "cm-storage-hw-",
      port,
      args: ["--embedded", "3"],
      readyLines: 4,
      config: {
        "default.replication.factor": 3,
        "offsets.topic.replication.factor": 3,
        "broker.heartbeat.interval.ms": 300,
        "replica.high.watermark.checkpoint.interval.ms": 500
      }
    })
    const brokers = [0, 1, 2].map((i) => `127.0.0.1:${port + i}`)
    const kafka = new Kafka({ clientId: "storage-hw", brokers, logLevel: logLevel.NOTHING, requestTimeout: 60_000 })
    const latest = async (): Promise<number> => {
      const admin = kafka.admin()
      await admin.connect()
      try {
        return Number((await admin.fetchTopicOffsets(topic))[0]!.high)
      } finally {
        await admin.disconnect()
      }
    }
    try {
      const admin = kafka.admin()
      await admin.connect()
      await admin.createTopics({ topics: [{ topic, numPartitions: 1, replicationFactor: 3 }], waitForLeaders: true })
      await admin.disconnect()
      const kcat = Kcat.forBootstrap(brokers.join(","))
      for (let round = 0; round < 5; round++)
        await kcat(["-P", "-t", topic, "-p", "0", "-X", "acks=all"], {
          input: `${lines(`r${round}`, 200).join("\n")}\n`
        })
      const hw = await latest()
      expect(hw).toBe(1000)
      // Every replica wrote that high watermark to its checkpoint (the interval passed at least once since).
      const dirs = [1, 2, 3].map((id) => partitionDir(path.join(server.dataDir!, `broker-${id}`), topic)!)
      await Wait.eventually(
        "the high watermark in every replica's checkpoint",
        () => (dirs.every((d) => checkpointedHighWatermark(d) === hw) ? true : undefined),
        60_000
      )
      await server.kill("SIGKILL")
      expect(dirs.map(checkpointedHighWatermark)).toEqual([hw, hw, hw])

      await server.restart()
      // The first answer counts: no waiting for the followers to report to the restarted leader.
      expect(await latest()).toBe(hw)
      const consumed = await consumeAll(kcat, topic)
      expect(consumed.length).toBe(hw)
    } finally {
      await server.stop()
    }
  })
})

describe("a damaged last batch after a clean shutdown", () => {
  for (const damage of ["torn", "flipped byte"] as const) {
    it(`${damage}: the next start cuts it with a WARN line and a metric; everything before it is consumed and new produces are readable`, async () => {
      const topic = damage === "torn" ? "torn-tail" : "flipped-tail"
      const metricsPort = await Ports.freePort()
      const server = await startServer({ config: { "metrics.port": metricsPort } })
      try {
        const produced: string[] = []
        for (let round = 0; round < 4; round++) {
          const values = lines(`r${round}`, 50)
          await server.kcat(["-P", "-t", topic, "-p", "0", "-X", "acks=all"], { input: `${values.join("\n")}\n` })
          produced.push(...values)
        }
        expect((await consumeAll(server.kcat, topic)).length).toBe(produced.length)
        // A clean shutdown (the clean-shutdown snapshot is written), then the damage to the files at rest.
        const exit = await server.kill("SIGTERM")
        expect(exit.code).toBe(0)
        const dir = partitionDir(server.dataDir!, topic)!
        expect(fs.existsSync(path.join(dir, "clean-shutdown"))).toBe(true)
        const segment = path.join(
          dir,
          fs
            .readdirSync(dir)
            .filter((f) => f.endsWith(".log"))
            .sort()
            .at(-1)!
        )
        const bytes = fs.readFileSync(segment)
        const batches = RecordBatch.split(bytes).batches
        const last = batches.at(-1)!
        const kept = RecordBatch.baseOffset(bytes, last.position)
        expect(kept).toBeGreaterThan(0)
        if (damage === "torn") fs.truncateSync(segment, bytes.length - 7)
        else {
          bytes[last.position + last.size - 3]! ^= 0x10
          fs.writeFileSync(segment, bytes)
        }

        await server.restart()
        const before = await consumeAll(server.kcat, topic)
        expect(before).toEqual(produced.slice(0, kept).map((v, i) => [i, v]))
        const after = lines("after", 20)
        await server.kcat(["-P", "-t", topic, "-p", "0", "-X", "acks=all"], { input: `${after.join("\n")}\n` })
        const all = await consumeAll(server.kcat, topic)
        expect(all).toEqual([...produced.slice(0, kept), ...after].map((v, i) => [i, v]))

        const output = server.output()
        expect(output).toMatch(
          new RegExp(
            `WARN log recovery truncated ${topic}-0 segment ${path.basename(segment)} at byte ${last.position} \\(${damage === "torn" ? "incomplete batch" : "CRC mismatch"}`
          )
        )
        expect(output).toContain(`log end offset now ${kept}`)
        const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()
        expect(metrics).toMatch(/^clustermirror_log_recovery_truncations_total 1$/m)
        expect(metrics).toMatch(/^clustermirror_log_recovery_truncated_bytes_total [1-9]\d*$/m)
      } finally {
        await server.stop()
      }
    })
  }
})

describe("a follower whose log was cut at its start", () => {
  it("fetches again from its new log end offset and ends with the leader's bytes", async () => {
    const topic = "refetch-after-cut"
    const cluster = await startCluster({
      brokers: 2,
      controllerConfig: { "broker.session.timeout.ms": 2000 },
      brokerConfig: {
        "broker.heartbeat.interval.ms": 300,
        "replica.lag.time.max.ms": 5000,
        "offsets.topic.replication.factor": 2
      }
    })
    try {
      const brokers = cluster.brokers
      const [leader, follower] = brokers as [(typeof brokers)[0], (typeof brokers)[0]]
      const admin = leader.kafka("storage-refetch").admin()
      await admin.connect()
      try {
        await Wait.eventually("2 live brokers", async () =>
          (await admin.describeCluster()).brokers.length === 2 ? true : undefined
        )
        await admin.createTopics({
          topics: [{ topic, replicaAssignment: [{ partition: 0, replicas: [1, 2] }] }],
          waitForLeaders: true
        })
      } finally {
        await admin.disconnect()
      }
      for (let round = 0; round < 4; round++)
        await leader.kcat(["-P", "-t", topic, "-p", "0", "-X", "acks=all"], {
          input: `${lines(`r${round}`, 50).join("\n")}\n`
        })
      const segmentOf = (b: (typeof brokers)[0]): string => {
        const dir = partitionDir(b.logDir, topic)!
        return path.join(
          dir,
          fs
            .readdirSync(dir)
            .filter((f) => f.endsWith(".log"))
            .sort()
            .at(-1)!
        )
      }
      const leaderBytes = fs.readFileSync(segmentOf(leader))
      expect(RecordBatch.split(leaderBytes).batches.length).toBeGreaterThan(1)
      const sameAsLeader = () =>
        fs.existsSync(segmentOf(follower)) && Buffer.compare(fs.readFileSync(segmentOf(follower)), leaderBytes) === 0
          ? true
          : undefined
      await Wait.eventually("the follower holding the leader's bytes", sameAsLeader)

      expect((await follower.kill("SIGTERM")).code).toBe(0)
      const segment = segmentOf(follower)
      const bytes = fs.readFileSync(segment)
      const last = RecordBatch.split(bytes).batches.at(-1)!
      bytes[last.position + last.size - 3]! ^= 0x10
      fs.writeFileSync(segment, bytes)
      await follower.restart()
      await Wait.eventually("the follower fetching the cut batch from its leader again", sameAsLeader)
      expect(follower.output()).toContain(`WARN log recovery truncated ${topic}-0 segment ${path.basename(segment)}`)
    } finally {
      await cluster.stop()
    }
  })
})

/** Mounts a tmpfs of `size` at a new directory, or undefined when this machine does not allow it. */
const mountTmpfs = (size: string): string | undefined => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cm-storage-full-"))
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", `size=${size}`, "tmpfs", dir], { stdio: "pipe" })
    return dir
  } catch {
    fs.rmSync(dir, { recursive: true, force: true })
    return undefined
  }
}

const canMount = (() => {
  const dir = mountTmpfs("1m")
  if (dir === undefined) return false
  execFileSync("umount", [dir])
  fs.rmSync(dir, { recursive: true, force: true })
  return true
})()

describe("a full disk", () => {
  it.runIf(canMount)(
    "answers produce with KAFKA_STORAGE_ERROR and a log line, and produces again once space returns",
    async () => {
      const mount = mountTmpfs("6m")!
      const topic = "fills-the-disk"
      try {
        const server = await startServer({ dataDir: path.join(mount, "data") })
        try {
          await server.kcat(["-P", "-t", topic, "-p", "0"], { input: "first\n" })
          // 64 KB values until the disk is full; librdkafka does not retry, so the broker's error is what it reports.
          const value = "x".repeat(64 * 1024)
          const produce = (n: number) =>
            server
              .kcat(["-P", "-t", topic, "-p", "0", "-X", "retries=0", "-X", "message.timeout.ms=20000"], {
                input: `${Array.from({ length: n }, () => value).join("\n")}\n`
              })
              .then(
                () => "",
                (e: unknown) => String(e)
              )
          const failure = await produce(200)
          expect(failure).toContain("Disk error when trying to access log file on disk")
          expect(server.output()).toMatch(
            new RegExp(`WARN storage error on produce of ${topic}-0: .*ENOSPC.*; answered KAFKA_STORAGE_ERROR`)
          )
          const stored = await consumeAll(server.kcat, topic)
          expect(stored[0]).toEqual([0, "first"])
          // Whatever was answered with an error is not in the log: the offsets stay dense and the values whole.
          expect(stored.every(([offset, v], i) => offset === i && (i === 0 || v === value))).toBe(true)

          execFileSync("mount", ["-o", "remount,size=64m", mount])
          await Wait.eventually("a produce once space returned", async () =>
            (await produce(1)) === "" ? true : undefined
          )
          await server.kcat(["-P", "-t", topic, "-p", "0"], { input: "last\n" })
          const after = await consumeAll(server.kcat, topic)
          expect(after.at(-1)![1]).toBe("last")
          expect(after.every(([offset], i) => offset === i)).toBe(true)
        } finally {
          await server.stop()
        }
      } finally {
        execFileSync("umount", ["-l", mount])
        fs.rmSync(mount, { recursive: true, force: true })
      }
    }
  )
})
