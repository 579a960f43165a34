import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Errors, RecordBatch } from "@clustermirror/protocol"
import { PartitionLog, PartitionLogStore } from "@clustermirror/storage"
import * as LogDirs from "../src/LogDirs.js"
import { ReplicaManager } from "../src/ReplicaManager.js"

const E = Errors.ErrorCode

const batch = (n: number) =>
  RecordBatch.build({ records: Array.from({ length: n }, (_, i) => ({ value: Buffer.from(`v${i}`) })), timestamp: 1 })

/** Broker 1 on real files: leader of a-0 and a-1, follower of b-0; `n` records appended to a-1. */
const setup = async (n: number) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "logdirs-"))
  const rm = new ReplicaManager({ store: PartitionLogStore.makeFileStore(dir), nodeId: 1 })
  const reg = (leader: number) => ({ replicas: [1, 2], isr: [1], leader, leaderEpoch: 0, partitionEpoch: 0 })
  rm.applyRegistration("a", 0, "AAAAAAAAAAAAAAAAAAAAAA", reg(1), PartitionLog.defaultConfig, false, 1)
  rm.applyRegistration("a", 1, "AAAAAAAAAAAAAAAAAAAAAA", reg(1), PartitionLog.defaultConfig, false, 1)
  rm.applyRegistration("b", 0, "AQAAAAAAAAAAAAAAAAAAAA", reg(2), PartitionLog.defaultConfig, false, 1)
  if (n > 0) await rm.appendAsLeader("a", 1, batch(n), true, 1)
  const close = () => {
    rm.close()
    fs.rmSync(dir, { recursive: true, force: true })
  }
  return { dir, rm, close }
}

const at = (replicas: ReplicaManager, dataDir: string): LogDirs.Broker => ({ replicas, config: { dataDir } })

/** Bytes of the segment files (`*.log`) of a partition directory, as Kafka counts a log's size. */
const segmentBytes = (dir: string) =>
  fs
    .readdirSync(dir)
    .filter((f) => f.endsWith(".log"))
    .reduce((sum, f) => sum + fs.statSync(path.join(dir, f)).size, 0)

describe("DescribeLogDirs", () => {
  it("lists every hosted partition in the one log dir, sized as its segment files on disk, with the volume's space", async () => {
    const { dir, rm, close } = await setup(5)
    try {
      const res = LogDirs.describeLogDirs(at(rm, dir), { topics: null })
      expect(res.errorCode).toBe(0)
      expect(res.results).toHaveLength(1)
      const [r] = res.results
      expect(r!.errorCode).toBe(0)
      expect(r!.logDir).toBe(path.resolve(dir))
      expect(r!.totalBytes).toBeGreaterThan(0n)
      expect(r!.usableBytes).toBeGreaterThanOrEqual(0n)
      expect(r!.usableBytes).toBeLessThanOrEqual(r!.totalBytes)
      expect(r!.topics.map((t) => [t.name, t.partitions.map((p) => p.partitionIndex)])).toEqual([
        ["a", [0, 1]],
        ["b", [0]]
      ])
      const a1 = r!.topics[0]!.partitions[1]!
      expect(a1.partitionSize).toBeGreaterThan(0n)
      expect(a1.partitionSize).toBe(BigInt(segmentBytes(path.join(dir, "a-1"))))
      expect(r!.topics[0]!.partitions[0]!.partitionSize).toBe(0n)
      for (const t of r!.topics) for (const p of t.partitions) expect([p.offsetLag, p.isFutureKey]).toEqual([0n, false])
    } finally {
      close()
    }
  })

  it("answers only the partitions asked for, and nothing for a partition not hosted here", async () => {
    const { dir, rm, close } = await setup(1)
    try {
      const res = LogDirs.describeLogDirs(at(rm, dir), {
        topics: [
          { topic: "a", partitions: [1, 7] },
          { topic: "nope", partitions: [0] }
        ]
      })
      expect(res.results[0]!.topics.map((t) => [t.name, t.partitions.map((p) => p.partitionIndex)])).toEqual([
        ["a", [1]]
      ])
    } finally {
      close()
    }
  })

  it("reports a directory it cannot read as Kafka reports an offline one: KAFKA_STORAGE_ERROR, no topics", async () => {
    const { dir, rm, close } = await setup(1)
    try {
      const res = LogDirs.describeLogDirs(at(rm, path.join(dir, "missing")), { topics: null })
      expect(res.results).toEqual([
        {
          errorCode: E.KAFKA_STORAGE_ERROR,
          logDir: path.join(path.resolve(dir), "missing"),
          topics: [],
          totalBytes: -1n,
          usableBytes: -1n,
          isCordoned: false
        }
      ])
    } finally {
      close()
    }
  })
})

describe("AlterReplicaLogDirs", () => {
  it("refuses a move to any other directory with LOG_DIR_NOT_FOUND and logs why", async () => {
    const { dir, rm, close } = await setup(1)
    const lines: Array<string> = []
    try {
      const res = LogDirs.alterReplicaLogDirs(
        at(rm, dir),
        {
          dirs: [
            { path: path.join(dir, "..", "other"), topics: [{ name: "a", partitions: [0, 1] }] },
            { path: "relative", topics: [{ name: "b", partitions: [0] }] }
          ]
        },
        { log: (l) => lines.push(l) }
      )
      expect(res.results).toEqual([
        {
          topicName: "a",
          partitions: [
            { partitionIndex: 0, errorCode: E.LOG_DIR_NOT_FOUND },
            { partitionIndex: 1, errorCode: E.LOG_DIR_NOT_FOUND }
          ]
        },
        { topicName: "b", partitions: [{ partitionIndex: 0, errorCode: E.LOG_DIR_NOT_FOUND }] }
      ])
      expect(lines).toHaveLength(2)
      expect(lines[0]).toContain("LOG_DIR_NOT_FOUND")
    } finally {
      close()
    }
  })

  it("into the directory a replica already is in: nothing to move; a partition not hosted here: REPLICA_NOT_AVAILABLE", async () => {
    const { dir, rm, close } = await setup(1)
    try {
      const res = LogDirs.alterReplicaLogDirs(at(rm, dir), {
        dirs: [{ path: `${dir}/`, topics: [{ name: "a", partitions: [1, 9] }] }]
      })
      expect(res.results).toEqual([
        {
          topicName: "a",
          partitions: [
            { partitionIndex: 1, errorCode: 0 },
            { partitionIndex: 9, errorCode: E.REPLICA_NOT_AVAILABLE }
          ]
        }
      ])
    } finally {
      close()
    }
  })
})
