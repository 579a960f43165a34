/**
 * kafkajs against the server process: an idempotent producer into a 3-partition topic, a consumer group
 * that reads and commits everything, and a second consumer in the same group that resumes exactly at
 * the committed offsets.
 */
import type { Admin, Consumer, Kafka } from "kafkajs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Wait } from "@clustermirror/testkit"
import { PEAK_RSS_LIMIT_MB, type ServerHandle, startServer } from "./harness.js"

const TOPIC = "kafkajs-idempotent"
const GROUP = "kafkajs-int-group"
const PARTITIONS = 3
const FIRST = 100_000
const SECOND = 1_000
const BATCH = 1_000

interface Received {
  readonly partition: number
  readonly offset: bigint
  readonly value: string
}

const value = (i: number): string => `kafkajs-${i}-${"x".repeat(40)}`

/** Sends values [from, to) in sendBatch calls of BATCH messages, keyed so they spread over partitions. */
const produceRange = async (kafka: Kafka, from: number, to: number): Promise<void> => {
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 })
  await producer.connect()
  try {
    for (let start = from; start < to; start += BATCH) {
      const messages = []
      for (let i = start; i < Math.min(to, start + BATCH); i++) messages.push({ key: `k${i}`, value: value(i) })
      const acks = await producer.sendBatch({ topicMessages: [{ topic: TOPIC, messages }], acks: -1 })
      for (const ack of acks) expect(ack.errorCode).toBe(0)
    }
  } finally {
    await producer.disconnect()
  }
}

/** Runs a group consumer until `expected` messages arrived; returns them and the still-running consumer. */
const consumeUntil = async (
  kafka: Kafka,
  expected: number
): Promise<{ readonly consumer: Consumer; readonly received: Received[] }> => {
  const consumer = kafka.consumer({ groupId: GROUP, sessionTimeout: 30_000, heartbeatInterval: 3_000 })
  const received: Received[] = []
  await consumer.connect()
  await consumer.subscribe({ topics: [TOPIC], fromBeginning: true })
  await consumer.run({
    eachBatch: async ({ batch, heartbeat }) => {
      for (const m of batch.messages)
        received.push({ partition: batch.partition, offset: BigInt(m.offset), value: m.value?.toString("utf8") ?? "" })
      await heartbeat()
    }
  })
  await Wait.eventually(
    `${expected} messages (have ${received.length})`,
    () => (received.length >= expected ? true : undefined),
    240_000
  )
  return { consumer, received }
}

/** The group's committed offsets per partition, as numbers. */
const committed = async (admin: Admin): Promise<Map<number, bigint>> => {
  const [t] = await admin.fetchOffsets({ groupId: GROUP, topics: [TOPIC] })
  return new Map((t?.partitions ?? []).map((p) => [p.partition, BigInt(p.offset)]))
}

const highWatermarks = async (admin: Admin): Promise<Map<number, bigint>> =>
  new Map((await admin.fetchTopicOffsets(TOPIC)).map((p) => [p.partition, BigInt(p.high)]))

const sameOffsets = (a: Map<number, bigint>, b: Map<number, bigint>): boolean =>
  a.size === b.size && [...a].every(([p, o]) => b.get(p) === o)

/** Each partition's offsets as received are strictly increasing and distinct values never repeat. */
const expectOrderedAndDistinct = (received: ReadonlyArray<Received>): void => {
  const last = new Map<number, bigint>()
  for (const r of received) {
    const prev = last.get(r.partition)
    if (prev !== undefined && r.offset <= prev)
      throw new Error(`partition ${r.partition}: offset ${r.offset} after ${prev}`)
    last.set(r.partition, r.offset)
  }
  expect(new Set(received.map((r) => r.value)).size).toBe(received.length)
}

const expectValues = (received: ReadonlyArray<Received>, from: number, to: number): void => {
  const got = new Set(received.map((r) => r.value))
  const missing: string[] = []
  for (let i = from; i < to; i++) if (!got.has(value(i))) missing.push(value(i))
  expect(missing.slice(0, 5)).toEqual([])
  expect(missing.length).toBe(0)
}

describe("kafkajs against the server", () => {
  let server: ServerHandle
  let kafka: Kafka
  let admin: Admin

  beforeAll(async () => {
    server = await startServer()
    kafka = server.kafka()
    admin = kafka.admin()
    await admin.connect()
  })

  afterAll(async () => {
    await admin?.disconnect()
    await server?.stop()
  })

  it(`creates a ${PARTITIONS}-partition topic`, async () => {
    expect(
      await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: PARTITIONS }], waitForLeaders: true })
    ).toBe(true)
    const md = await admin.fetchTopicMetadata({ topics: [TOPIC] })
    expect(md.topics[0]!.partitions.map((p) => p.partitionId).sort()).toEqual([0, 1, 2])
  })

  it(`produces ${FIRST} messages idempotently, and a group consumes and commits all of them`, async () => {
    const t0 = Date.now()
    await produceRange(kafka, 0, FIRST)
    const t1 = Date.now()

    const hw = await highWatermarks(admin)
    expect([...hw.values()].reduce((a, b) => a + b, 0n)).toBe(BigInt(FIRST))
    // Keys spread over every partition; a partitioner or routing bug would leave one empty.
    for (const p of [0, 1, 2]) expect(hw.get(p)! > 0n).toBe(true)

    const { consumer, received } = await consumeUntil(kafka, FIRST)
    const t2 = Date.now()
    console.log(`kafkajs: produced ${FIRST} in ${t1 - t0} ms, consumed in ${t2 - t1} ms`)
    try {
      await Wait.eventually("committed offsets to reach the high watermarks", async () =>
        sameOffsets(await committed(admin), hw) ? true : undefined
      )
    } finally {
      await consumer.disconnect()
    }

    expect(received.length).toBe(FIRST)
    expectOrderedAndDistinct(received)
    expectValues(received, 0, FIRST)
    expect(sameOffsets(await committed(admin), hw)).toBe(true)
  })

  it(`a new consumer in the same group receives exactly the ${SECOND} messages produced after the commit`, async () => {
    const before = await committed(admin)
    await produceRange(kafka, FIRST, FIRST + SECOND)
    const hw = await highWatermarks(admin)
    expect([...hw.values()].reduce((a, b) => a + b, 0n)).toBe(BigInt(FIRST + SECOND))
    // Producing does not move the group's offsets.
    expect(sameOffsets(await committed(admin), before)).toBe(true)

    const { consumer, received } = await consumeUntil(kafka, SECOND)
    try {
      // Give a wrongly rewound consumer time to show the old messages too.
      await new Promise((r) => setTimeout(r, 3_000))
      await Wait.eventually("committed offsets to reach the new high watermarks", async () =>
        sameOffsets(await committed(admin), hw) ? true : undefined
      )
    } finally {
      await consumer.disconnect()
    }

    expect(received.length).toBe(SECOND)
    expectOrderedAndDistinct(received)
    expectValues(received, FIRST, FIRST + SECOND)
    for (const r of received) expect(r.offset >= before.get(r.partition)!).toBe(true)
  })

  it(`keeps the server's peak RSS under ${PEAK_RSS_LIMIT_MB} MB`, () => {
    const peak = server.peakRssMb()
    console.log(`server peak RSS (kafkajs suite): ${peak.toFixed(1)} MB`)
    expect(peak).toBeGreaterThan(0)
    expect(peak).toBeLessThan(PEAK_RSS_LIMIT_MB)
  })
})
