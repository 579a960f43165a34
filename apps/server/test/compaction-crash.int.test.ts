/**
 * A SIGKILL while the log cleaner swaps segments loses nothing. One server, one compacted partition in
 * segments of 4 KB, filled by kcat (idempotent, so that offsets follow the order written; batches of 25
 * records, so that a round spans several segments): each round writes keys of its own once, then many
 * updates of a few shared keys with some tombstones, and tombstones last. `min.compaction.lag.ms` holds
 * the cleaner back until a round is written and acknowledged; then the test watches the partition
 * directory and SIGKILLs the server the moment the cleaner creates a `.log.cleaned` file (it is rewriting
 * a group of segments), renames one to `.log.swap` (the swap's commit), or deletes the first old segment
 * after a commit, in turn by round. A kill landed mid-clean when such a file is still there after the
 * process died; at least one must.
 *
 * After every restart: the partition loads (recovery finishes or discards the swap), its offsets strictly
 * increase, every record read is one written at that offset, the last record of every key is there (a
 * tombstone may be gone), no key's latest offset went back, the active segment is whole, and cleaning then
 * completes (one record per key below the active segment). The next round's writes land after it.
 */
import { existsSync, readdirSync, readFileSync, watch } from "node:fs"
import { join } from "node:path"
import { Wait } from "@clustermirror/testkit"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ServerHandle, startServer } from "./harness.js"

const TOPIC = "compacted-crash"
const KEYS = 40
const ROUNDS = 6
const RECORDS_PER_ROUND = 2_000
/** Keys written once, in one round only. */
const ONCE_PER_ROUND = 30
/** Of the keys written once in a round, how many the next round deletes. */
const DELETED_PER_ROUND = 5
/** Keys whose last record of a round is a tombstone (the next round writes them again). */
const TOMBSTONED = ["k37", "k38", "k39"]
const LAG_MS = 1_500
const TOPIC_CONFIGS: Record<string, string> = {
  "cleanup.policy": "compact",
  "segment.bytes": "4096",
  "min.cleanable.dirty.ratio": "0.01",
  "min.compaction.lag.ms": String(LAG_MS),
  "delete.retention.ms": "1000"
}

interface Written {
  readonly key: string
  /** null: a tombstone. */
  readonly value: string | null
}

interface Read extends Written {
  readonly offset: number
}

const SEGMENT = /^(\d{20})\.log$/
const MID_CLEAN = /\.log\.(cleaned|swap)$/
const TRIGGERS = ["cleaned", "swap", "delete"] as const

describe("SIGKILL during log cleaning", () => {
  let server: ServerHandle
  let partitionDir: string

  beforeAll(async () => {
    server = await startServer({
      config: {
        "log.cleaner.backoff.ms": 20,
        "log.cleaner.dedupe.buffer.size": 16 * 1024 * 1024,
        "replica.high.watermark.checkpoint.interval.ms": 200
      }
    })
    const admin = server.kafka().admin()
    await admin.connect()
    try {
      await admin.createTopics({
        topics: [
          {
            topic: TOPIC,
            numPartitions: 1,
            replicationFactor: 1,
            configEntries: Object.entries(TOPIC_CONFIGS).map(([name, value]) => ({ name, value }))
          }
        ],
        waitForLeaders: true
      })
    } finally {
      await admin.disconnect()
    }
    partitionDir = join(server.dataDir!, `${TOPIC}-0`)
  }, 120_000)

  afterAll(async () => {
    await server?.stop()
  })

  const highWatermark = async (): Promise<number> => {
    const admin = server.kafka().admin()
    await admin.connect()
    try {
      const [p] = await admin.fetchTopicOffsets(TOPIC)
      return Number(p!.high)
    } finally {
      await admin.disconnect()
    }
  }

  /** Every record of the partition, in the order served: offset, key, value (null for a tombstone). */
  const readAll = async (): Promise<Read[]> => {
    const { stdout } = await server.kcat([
      ...["-C", "-t", TOPIC, "-p", "0", "-o", "beginning", "-e", "-q", "-Z"],
      ...["-f", "%o %k %s\\n"]
    ])
    return stdout
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => {
        const [offset, key, value] = l.split(" ")
        return { offset: Number(offset), key: key!, value: value === "NULL" ? null : value! }
      })
  }

  const segmentBases = (): number[] =>
    readdirSync(partitionDir)
      .flatMap((n) => {
        const m = SEGMENT.exec(n)
        return m === null ? [] : [Number(m[1])]
      })
      .sort((a, b) => a - b)

  it("loses nothing when killed while the cleaner swaps segments, and cleaning completes after each restart", async () => {
    /** Every record written, by offset. */
    const written = new Map<number, Written>()
    const latestOffsetOf = new Map<string, number>()
    let landed = 0
    const kills: string[] = []

    /** The last record written of every key. */
    const lastWritten = (): Map<string, Read> => {
      const last = new Map<string, Read>()
      for (const [offset, w] of written) last.set(w.key, { offset, ...w })
      return last
    }
    /** The invariants of what is read back, with every offset below `end` written. */
    const check = (read: ReadonlyArray<Read>, end: number): void => {
      for (let i = 1; i < read.length; i++) expect(read[i]!.offset).toBeGreaterThan(read[i - 1]!.offset)
      // Every record served is the one written at its offset.
      for (const r of read) expect({ key: r.key, value: r.value }, `offset ${r.offset}`).toEqual(written.get(r.offset))
      const lastRead = new Map<string, Read>()
      for (const r of read) lastRead.set(r.key, r)
      for (const [key, w] of lastWritten()) {
        const r = lastRead.get(key)
        // The last record of a key is there, or it was a tombstone and it went with all of its key.
        if (w.value === null && r === undefined) continue
        expect(r, key).toEqual(w)
      }
      // The active segment is never cleaned: all of it is there.
      const active = segmentBases().at(-1)!
      const tail = read.filter((r) => r.offset >= active).map((r) => r.offset)
      expect(tail).toEqual([...written.keys()].filter((o) => o >= active && o < end))
    }

    for (let round = 0; round < ROUNDS; round++) {
      // Write a round: its own keys once, tombstones for some of the previous round's, every shared key
      // many times with a few tombstones among the updates, and tombstones last.
      const from = await highWatermark()
      // Keys of this round only come first: their one record lies deep in the log, in what later passes
      // rewrite and swap, and they are big enough that what is left after cleaning still spans segments
      // (swapped one group at a time), so a swap that lost a segment would lose some of them.
      const records: Written[] = Array.from({ length: ONCE_PER_ROUND }, (_, j) => ({
        key: `once-${round}-${j}`,
        value: `r${round}-once-${"x".repeat(100)}`
      }))
      // The previous round's first own keys are deleted for good: nothing writes them again.
      if (round > 0)
        for (let j = 0; j < DELETED_PER_ROUND; j++) records.push({ key: `once-${round - 1}-${j}`, value: null })
      for (let i = records.length; i < RECORDS_PER_ROUND - TOMBSTONED.length; i++)
        records.push({ key: `k${i % KEYS}`, value: i % 173 === 5 ? null : `r${round}-${i}` })
      for (const key of TOMBSTONED) records.push({ key, value: null })
      await server.kcat(
        ["-P", "-t", TOPIC, "-p", "0", "-K", "|", "-Z", "-X", "enable.idempotence=true", "-X", "batch.num.messages=25"],
        {
          input: `${records.map((r) => `${r.key}|${r.value ?? ""}`).join("\n")}\n`
        }
      )
      // Every record is acknowledged before the kill is armed: the model is exactly what the log holds.
      expect(await highWatermark()).toBe(from + records.length)
      records.forEach((r, i) => {
        written.set(from + i, r)
      })

      // Kill the process the moment the cleaner starts rewriting a group, commits its swap, or deletes the
      // first of the segments the swap replaces (one round in three each).
      const trigger = TRIGGERS[round % TRIGGERS.length]!
      const pid = server.pid
      let fired = false
      let swapped = false
      const killed = new Promise<string>((resolve) => {
        const fire = (why: string): void => {
          if (fired) return
          fired = true
          process.kill(pid, "SIGKILL")
          watcher.close()
          clearTimeout(timer)
          resolve(why)
        }
        const watcher = watch(partitionDir, (_event, name) => {
          if (name === null) return
          if (name.endsWith(".log.swap")) swapped = true
          if (trigger === "cleaned" && name.endsWith(".log.cleaned")) fire(`${name} appeared`)
          else if (trigger === "swap" && name.endsWith(".log.swap")) fire(`${name} appeared`)
          else if (trigger === "delete" && swapped && SEGMENT.test(name) && !existsSync(join(partitionDir, name)))
            fire(`${name} was deleted after a swap's commit`)
        })
        // Should the cleaner have nothing left to do, kill anyway: such a round does not count as landed.
        const timer = setTimeout(() => fire("no cleaning was seen"), 10_000)
      })
      const why = await killed
      const exit = await server.kill("SIGKILL")
      expect(exit.signal).toBe("SIGKILL")
      const leftover = readdirSync(partitionDir).filter((n) => MID_CLEAN.test(n) || n.startsWith("cleaner-swap"))
      if (leftover.some((n) => MID_CLEAN.test(n))) landed++
      // For the log: how many segments of a committed swap's range were still there.
      const range = leftover.includes("cleaner-swap")
        ? (JSON.parse(readFileSync(join(partitionDir, "cleaner-swap"), "utf8")) as { base: number; end: number })
        : undefined
      const inRange = range && segmentBases().filter((b) => b >= range.base && b < range.end).length
      kills.push(
        `round ${round}: killed when ${why}; left ${leftover.length === 0 ? "nothing" : leftover.join(", ")}` +
          (range === undefined ? "" : ` (swap of [${range.base}, ${range.end}), ${inRange} old segments left)`)
      )

      await server.restart()
      const end = from + records.length
      await Wait.eventually("the partition is served again up to its log end", async () =>
        (await highWatermark()) === end ? true : undefined
      )
      const read = await readAll()
      check(read, end)
      // No key's latest record went back: what was seen before this restart is the floor (a key may only
      // be gone when its last record is a tombstone).
      const lastRead = new Map<string, number>()
      for (const r of read) lastRead.set(r.key, r.offset)
      const last = lastWritten()
      for (const [key, offset] of latestOffsetOf) {
        const now = lastRead.get(key)
        if (now === undefined) expect(last.get(key)?.value, key).toBeNull()
        else expect(now, key).toBeGreaterThanOrEqual(offset)
      }
      for (const [key, offset] of lastRead) latestOffsetOf.set(key, offset)

      // Cleaning completes after the restart: below the active segment one record per key is left, the last
      // one written there.
      await Wait.eventually(
        `round ${round}: cleaning completes after the restart`,
        async () => {
          const now = await readAll()
          check(now, end)
          const active = segmentBases().at(-1)!
          const below = now.filter((r) => r.offset < active)
          const lastBelow = new Map<string, number>()
          for (const [offset, w] of written) if (offset < active) lastBelow.set(w.key, offset)
          return below.every((r) => lastBelow.get(r.key) === r.offset) ? true : undefined
        },
        60_000,
        200
      )
      expect(server.output()).not.toMatch(/log cleaner: cleaning .* failed/)
    }

    console.log(`compaction crash: ${landed} of ${ROUNDS} kills landed mid-clean\n${kills.join("\n")}`)
    expect(landed).toBeGreaterThan(0)

    // The tombstones below the active segment go once delete.retention.ms passed after the pass that first
    // cleaned them, kills during those passes or not.
    const deleted = [...written.values()].filter((w) => w.value === null && w.key.startsWith("once-")).length
    expect(deleted).toBe((ROUNDS - 1) * DELETED_PER_ROUND)
    await Wait.eventually(
      "the tombstones below the active segment are gone",
      async () => {
        const now = await readAll()
        check(now, ROUNDS * RECORDS_PER_ROUND)
        const active = segmentBases().at(-1)!
        return now.some((r) => r.offset < active && r.value === null) ? undefined : true
      },
      60_000,
      200
    )

    // After the last restart new writes land at the log end and are read back as written.
    const end = await highWatermark()
    await server.kcat(["-P", "-t", TOPIC, "-p", "0", "-K", "|"], { input: "k0|after-1\nk1|after-2\n" })
    expect(await highWatermark()).toBe(end + 2)
    const last = (await readAll()).slice(-2)
    expect(last).toEqual([
      { offset: end, key: "k0", value: "after-1" },
      { offset: end + 1, key: "k1", value: "after-2" }
    ])
  }, 300_000)
})
