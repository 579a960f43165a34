/**
 * DescribeTopicPartitions (key 75): the frames Kafka 4.4's `kafka-topics --describe
 * --partition-size-limit-per-response 1` sent for a topic of two partitions and Apache Kafka 4.4 answered,
 * captured by `fixtures/capture-group-admin.ts` into `fixtures/group-admin/`: two pages, the first ending
 * in a cursor the second request carries. Each decodes and encodes back to the same bytes.
 */
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { readFileSync } from "node:fs"
import * as Api from "../src/Api.js"
import { DescribeTopicPartitions } from "../src/index.js"

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex")

const captured = (name: string) => {
  const json = JSON.parse(readFileSync(new URL(`./fixtures/group-admin/${name}.json`, import.meta.url), "utf8"))
  return { apiVersion: Number(json.apiVersion), frame: Buffer.from(String(json.hex), "hex") }
}

const page = (name: string) => {
  const request = captured(`${name}-request`)
  const decoded = Either.getOrThrow(Api.decodeRequest(DescribeTopicPartitions.api, request.frame))
  const again = Either.getOrThrow(
    Api.encodeRequest(
      DescribeTopicPartitions.api,
      0,
      decoded.header.correlationId,
      decoded.header.clientId,
      decoded.body
    )
  )
  expect(hex(again.subarray(4))).toBe(hex(request.frame))
  const response = captured(`${name}-response`)
  const answer = Either.getOrThrow(Api.decodeResponse(DescribeTopicPartitions.api, 0, response.frame))
  expect(answer.correlationId).toBe(decoded.header.correlationId)
  const chunks = Either.getOrThrow(
    Api.encodeResponseChunks(DescribeTopicPartitions.api, 0, answer.correlationId, answer.body)
  )
  expect(hex(Buffer.concat(chunks).subarray(4))).toBe(hex(response.frame))
  return { header: decoded.header, request: decoded.body, response: answer.body }
}

const partition = (partitionIndex: number) => ({
  errorCode: 0,
  partitionIndex,
  leaderId: 1,
  leaderEpoch: 0,
  replicaNodes: [1],
  isrNodes: [1],
  // Without ELR enabled Kafka sends empty lists, not null.
  eligibleLeaderReplicas: [],
  lastKnownElr: [],
  offlineReplicas: []
})

describe("DescribeTopicPartitions (key 75)", () => {
  it("serves v0 only, flexible", () => {
    expect([DescribeTopicPartitions.api.minVersion, DescribeTopicPartitions.api.maxVersion]).toEqual([0, 0])
    expect(DescribeTopicPartitions.Request.isFlexible(0) && DescribeTopicPartitions.Response.isFlexible(0)).toBe(true)
  })

  it("golden: the first page asks from no cursor and is cut after one partition, with the cursor of the next", () => {
    const first = page("describe-topic-partitions-v0")
    expect([first.header.apiVersion, first.header.clientId]).toEqual([0, "adminclient-1"])
    expect(first.request).toEqual({ topics: [{ name: "golden-admin" }], responsePartitionLimit: 1, cursor: null })
    expect(first.response).toMatchObject({
      throttleTimeMs: 0,
      topics: [
        {
          errorCode: 0,
          name: "golden-admin",
          isInternal: false,
          partitions: [partition(0)],
          // Every topic operation: the broker has no authorizer.
          topicAuthorizedOperations: 0xdf8
        }
      ],
      nextCursor: { topicName: "golden-admin", partitionIndex: 1 }
    })
  })

  it("golden: the second page starts at the cursor and ends the listing with a null cursor", () => {
    const first = page("describe-topic-partitions-v0")
    const second = page("describe-topic-partitions-v0-2")
    expect(second.request).toEqual({
      topics: [{ name: "golden-admin" }],
      responsePartitionLimit: 1,
      cursor: { topicName: "golden-admin", partitionIndex: 1 }
    })
    expect(second.response.topics.map((t) => [t.name, t.topicId, t.partitions])).toEqual([
      ["golden-admin", first.response.topics[0]!.topicId, [partition(1)]]
    ])
    expect(second.response.nextCursor).toBeNull()
  })

  it("the request's cursor is a nullable struct: -1 for null, else its fields and tagged section", () => {
    const none = Either.getOrThrow(
      DescribeTopicPartitions.Request.encode(0, { topics: [], responsePartitionLimit: 2000, cursor: null })
    )
    expect(hex(none)).toBe("01" + "000007d0" + "ff" + "00")
    const some = Either.getOrThrow(
      DescribeTopicPartitions.Request.encode(0, {
        topics: [{ name: "t" }],
        responsePartitionLimit: 2,
        cursor: { topicName: "t", partitionIndex: 3 }
      })
    )
    expect(hex(some)).toBe("02" + "0274" + "00" + "00000002" + "01" + "0274" + "00000003" + "00" + "00")
  })
})
