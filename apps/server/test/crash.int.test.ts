/**
 * Crash durability: a producer with acks=-1 writes continuously, the server is SIGKILLed mid-stream and
 * restarted on the same data dir and port. Every acknowledged message must be readable at exactly the
 * offset it was acknowledged with, and new writes continue at the log end.
 */
import type { Producer } from "kafkajs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { PEAK_RSS_LIMIT_MB, type ServerHandle, startServer } from "./harness.js"

const TOPIC = "crash-acks-all"
const RUN_BEFORE_KILL_MS = 2_000
const WRITERS = 2
const MESSAGES_PER_SEND = 20

/** Reads the whole partition as offset -> value. */
const readAll = async (server: ServerHandle): Promise<Map<bigint, string>> => {
  const { stdout } = await server.kcat(["-C", "-t", TOPIC, "-p", "0", "-e", "-q", "-o", "beginning", "-f", "%o %s\\n"])
  const log = new Map<bigint, string>()
  for (const line of stdout.split("\n")) {
    if (line === "") continue
    const space = line.indexOf(" ")
    log.set(BigInt(line.slice(0, space)), line.slice(space + 1))
  }
  return log
}

/** The partition's log start and high watermark as a consumer sees them (ListOffsets). */
const partitionOffsets = async (server: ServerHandle): Promise<{ readonly low: bigint; readonly high: bigint }> => {
  const admin = server.kafka().admin()
  await admin.connect()
  try {
    const [p] = await admin.fetchTopicOffsets(TOPIC)
    return { low: BigInt(p!.low), high: BigInt(p!.high) }
  } finally {
    await admin.disconnect()
  }
}

describe("SIGKILL during acks=-1 produce", () => {
  let server: ServerHandle
  /** offset -> value for every message the server acknowledged before it died. */
  const acked = new Map<bigint, string>()

  beforeAll(async () => {
    server = await startServer()
  })

  afterAll(async () => {
    await server?.stop()
  })

  it("acknowledged writes survive a SIGKILL at their acknowledged offsets", async () => {
    const admin = server.kafka().admin()
    await admin.connect()
    expect(await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: 1 }], waitForLeaders: true })).toBe(true)
    await admin.disconnect()

    // No retries: a send either is acknowledged with its offset before the kill or fails.
    const producer: Producer = server
      .kafka("crash-producer")
      .producer({ retry: { retries: 0 }, allowAutoTopicCreation: false })
    await producer.connect()
    let stop = false
    let seq = 0
    let failures = 0
    const writer = async (w: number): Promise<void> => {
      while (!stop) {
        const values = Array.from({ length: MESSAGES_PER_SEND }, () => `w${w}-m${seq++}`)
        try {
          const [meta] = await producer.send({ topic: TOPIC, acks: -1, messages: values.map((value) => ({ value })) })
          expect(meta!.errorCode).toBe(0)
          const base = BigInt(meta!.baseOffset!)
          for (const [i, v] of values.entries()) acked.set(base + BigInt(i), v)
        } catch {
          failures++
          if (!server.isAlive()) return
        }
      }
    }
    const writers = Array.from({ length: WRITERS }, (_, w) => writer(w))
    await new Promise((r) => setTimeout(r, RUN_BEFORE_KILL_MS))
    const exit = await server.kill("SIGKILL")
    stop = true
    await Promise.all(writers)
    await producer.disconnect().catch(() => {})
    expect(exit.signal).toBe("SIGKILL")
    console.log(`crash: ${acked.size} messages acknowledged before SIGKILL, ${failures} sends failed`)
    expect(acked.size).toBeGreaterThan(0)

    await server.restart()
    // Acknowledged means committed: the high watermark after recovery must cover every acked offset,
    // or consumers cannot see data that is on disk.
    const maxAcked = [...acked.keys()].reduce((a, b) => (a > b ? a : b))
    const { low, high } = await partitionOffsets(server)
    expect(low).toBe(0n)
    expect(high).toBeGreaterThan(maxAcked)

    const log = await readAll(server)
    const wrong: string[] = []
    for (const [offset, v] of acked) if (log.get(offset) !== v) wrong.push(`${offset}: ${log.get(offset)} != ${v}`)
    expect(wrong.slice(0, 5)).toEqual([])
    // Offsets in a plain log are dense from 0: recovery must not leave holes or duplicates.
    const offsets = [...log.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
    expect(offsets[0]).toBe(0n)
    expect(offsets[offsets.length - 1]).toBe(BigInt(offsets.length - 1))
  })

  it("new produces after the restart continue at the log end offset", async () => {
    const before = await readAll(server)
    const next = BigInt(before.size)
    const producer = server.kafka("after-restart").producer()
    await producer.connect()
    const [meta] = await producer.send({
      topic: TOPIC,
      acks: -1,
      messages: [{ value: "after-1" }, { value: "after-2" }]
    })
    await producer.disconnect()
    expect(BigInt(meta!.baseOffset!)).toBe(next)

    const after = await readAll(server)
    expect(after.get(next)).toBe("after-1")
    expect(after.get(next + 1n)).toBe("after-2")
    for (const [offset, v] of acked) expect(after.get(offset)).toBe(v)

    expect((await partitionOffsets(server)).high).toBe(next + 2n)
  })

  it(`keeps the server's peak RSS under ${PEAK_RSS_LIMIT_MB} MB`, () => {
    const peak = server.peakRssMb()
    console.log(`server peak RSS (crash suite): ${peak.toFixed(1)} MB`)
    expect(peak).toBeGreaterThan(0)
    expect(peak).toBeLessThan(PEAK_RSS_LIMIT_MB)
  })
})
