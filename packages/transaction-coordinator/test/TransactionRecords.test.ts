import { describe, expect, it } from "@effect/vitest"
import { Either, FastCheck as fc } from "effect"
import { Buffer } from "node:buffer"
import * as TransactionRecords from "../src/TransactionRecords.js"

const topicPartitions = fc
  .uniqueArray(fc.string({ minLength: 1, maxLength: 20 }), { maxLength: 4 })
  .chain((topics) =>
    fc.tuple(
      ...topics.map((topic) =>
        fc
          .uniqueArray(fc.integer({ min: 0, max: 1000 }), { minLength: 1, maxLength: 5 })
          .map((ps) => ({ topic, partitions: ps.sort((a, b) => a - b) }))
      )
    )
  )

const arbitraryValue: fc.Arbitrary<TransactionRecords.TransactionLogValue> = fc
  .record({
    producerId: fc.bigInt({ min: 0n, max: 2n ** 62n }),
    previousProducerId: fc.oneof(fc.constant(-1n), fc.bigInt({ min: 0n, max: 2n ** 62n })),
    nextProducerId: fc.oneof(fc.constant(-1n), fc.bigInt({ min: 0n, max: 2n ** 62n })),
    producerEpoch: fc.integer({ min: 0, max: 32767 }),
    timeoutMs: fc.integer({ min: 1, max: 2 ** 31 - 1 }),
    state: fc.constantFrom(...TransactionRecords.TransactionStates),
    partitions: topicPartitions,
    lastUpdateTimestampMs: fc.integer({ min: 0, max: 2 ** 50 }),
    startTimestampMs: fc.integer({ min: -1, max: 2 ** 50 }),
    clientTransactionVersion: fc.integer({ min: 0, max: 2 })
  })
  .map((v) => (v.state === "Empty" ? { ...v, partitions: [] } : v))

const record = fc.oneof(
  fc.tuple(fc.string({ maxLength: 40 }), arbitraryValue).map(([id, v]) => TransactionRecords.metadata(id, v)),
  fc.string({ maxLength: 40 }).map(TransactionRecords.tombstone)
)

describe("TransactionRecords", () => {
  it.prop("every record decodes to itself", [record], ([r]) => {
    const { key, value } = TransactionRecords.encode(r)
    expect(TransactionRecords.decode(key, value)).toEqual(Either.right(r))
  })

  it.prop(
    "arbitrary bytes decode to a typed error or a record, never an exception",
    [fc.uint8Array({ maxLength: 64 }), fc.option(fc.uint8Array({ maxLength: 128 }))],
    ([key, value]) => {
      const decoded = TransactionRecords.decode(key, value)
      if (Either.isLeft(decoded)) expect(decoded.left._tag).toBe("DecodeError")
    }
  )

  it("writes Kafka's layout: key v0 with the id, value v1 with the fields in order and no tagged fields at their defaults", () => {
    const { key, value } = TransactionRecords.encode(
      TransactionRecords.metadata("tx", {
        producerId: 7n,
        previousProducerId: -1n,
        nextProducerId: -1n,
        producerEpoch: 3,
        timeoutMs: 60000,
        state: "Ongoing",
        partitions: [{ topic: "t", partitions: [0, 2] }],
        lastUpdateTimestampMs: 1000,
        startTimestampMs: 900,
        clientTransactionVersion: 0
      })
    )
    expect(key.toString("hex")).toBe("0000" + "0002" + Buffer.from("tx").toString("hex"))
    expect(value!.toString("hex")).toBe(
      [
        "0001", // value version 1
        "0000000000000007", // ProducerId
        "0003", // ProducerEpoch
        "0000ea60", // TransactionTimeoutMs
        "01", // TransactionStatus Ongoing
        "02", // TransactionPartitions: 1 entry (compact)
        "02" + Buffer.from("t").toString("hex"), // Topic
        "03" + "00000000" + "00000002", // PartitionIds
        "00", // entry's tagged fields
        "00000000000003e8", // TransactionLastUpdateTimestampMs
        "0000000000000384", // TransactionStartTimestampMs
        "00" // tagged fields: none at their defaults
      ].join("")
    )
  })

  it("reads a v0 value as Kafka writes it for transactions v1, and an Empty one with no partition list", () => {
    const v0 = Buffer.from(
      [
        "0000",
        "0000000000000009",
        "0000",
        "000003e8",
        "00", // Empty
        "ffffffff", // null partitions
        "0000000000000005",
        "ffffffffffffffff"
      ].join(""),
      "hex"
    )
    const key = Buffer.from("0000" + "0001" + Buffer.from("a").toString("hex"), "hex")
    expect(TransactionRecords.decode(key, v0)).toEqual(
      Either.right(
        TransactionRecords.metadata("a", {
          producerId: 9n,
          previousProducerId: -1n,
          nextProducerId: -1n,
          producerEpoch: 0,
          timeoutMs: 1000,
          state: "Empty",
          partitions: [],
          lastUpdateTimestampMs: 5,
          startTimestampMs: -1,
          clientTransactionVersion: 0
        })
      )
    )
    expect(TransactionRecords.encode(TransactionRecords.tombstone("a")).value).toBeNull()
  })
})
