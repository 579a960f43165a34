import { describe, expect, it } from "@effect/vitest"
import { Errors } from "@clustermirror/protocol"
import * as fc from "fast-check"
import * as TopicControl from "../src/TopicControl.js"

const cluster: TopicControl.ClusterView = { liveBrokers: [0], defaultPartitions: 3, defaultReplicationFactor: 1 }
let n = 0
const ids = () => `AAAAAAAAAAAAAAAAAAAA${String.fromCharCode(65 + (n++ % 26))}A`

const topic = (name: string, extra: Partial<TopicControl.CreatableTopic> = {}): TopicControl.CreatableTopic => ({
  name,
  numPartitions: -1,
  replicationFactor: -1,
  assignments: [],
  configs: [],
  topicId: null,
  ...extra
})

/** given records → when decide → then records and response; the records replay cleanly. */
const when = <R>(
  given: ReadonlyArray<TopicControl.TopicsRecord>,
  decide: (image: TopicControl.TopicsImage) => TopicControl.ControlResult<R>
) => {
  const image = TopicControl.replayAll(TopicControl.empty, given)
  const result = decide(image)
  const after = TopicControl.replayAll(image, result.records)
  return { ...result, after }
}

describe("TopicControl.createTopics", () => {
  it("emits a TopicRecord, a PartitionRecord per partition and the configs", () => {
    const { records, response, after } = when([], (img) =>
      TopicControl.createTopics(
        img,
        [topic("orders", { configs: [{ name: "retention.ms", value: "1000" }] })],
        cluster,
        ids,
        false
      )
    )
    expect(records.map((r) => r.type)).toEqual([
      "TopicRecord",
      "PartitionRecord",
      "PartitionRecord",
      "PartitionRecord",
      "ConfigRecord"
    ])
    expect(response[0]).toMatchObject({ name: "orders", errorCode: 0, numPartitions: 3, replicationFactor: 1 })
    const t = TopicControl.topicByName(after, "orders")!
    expect(t.partitions.map((p) => p.partitionId)).toEqual([0, 1, 2])
    expect(t.configs.get("retention.ms")).toBe("1000")
  })

  it("uses the caller's topic id (CreateTopics v8 MirrorInfo)", () => {
    const id = "q83vEjRWeJCrze8SNFZ4kA"
    const { response, after } = when([], (img) =>
      TopicControl.createTopics(img, [topic("m", { topicId: id })], cluster, ids, false)
    )
    expect(response[0]!.topicId).toBe(id)
    expect(after.byId.get(id)?.name).toBe("m")
  })

  it("rejects what Kafka rejects, per topic (partial success)", () => {
    const existing = when([], (img) => TopicControl.createTopics(img, [topic("dup")], cluster, ids, false)).records
    const { response, records } = when(existing, (img) =>
      TopicControl.createTopics(
        img,
        [
          topic("ok"),
          topic("dup"),
          topic("bad name!"),
          topic(".."),
          topic("x".repeat(250)),
          topic("zero", { numPartitions: 0 }),
          topic("rf", { replicationFactor: 3 }),
          topic("cfg", { configs: [{ name: "no.such.config", value: "1" }] }),
          topic("twice"),
          topic("twice")
        ],
        cluster,
        ids,
        false
      )
    )
    expect(response.map((r) => [r.name.slice(0, 10), r.errorCode])).toEqual([
      ["ok", 0],
      ["dup", Errors.ErrorCode.TOPIC_ALREADY_EXISTS],
      ["bad name!", Errors.ErrorCode.INVALID_TOPIC_EXCEPTION],
      ["..", Errors.ErrorCode.INVALID_TOPIC_EXCEPTION],
      ["xxxxxxxxxx", Errors.ErrorCode.INVALID_TOPIC_EXCEPTION],
      ["zero", Errors.ErrorCode.INVALID_PARTITIONS],
      ["rf", Errors.ErrorCode.INVALID_REPLICATION_FACTOR],
      ["cfg", Errors.ErrorCode.INVALID_CONFIG],
      ["twice", Errors.ErrorCode.INVALID_REQUEST],
      ["twice", Errors.ErrorCode.INVALID_REQUEST]
    ])
    expect(records.filter((r) => r.type === "TopicRecord").length).toBe(1)
  })

  it("validateOnly writes nothing", () => {
    const { records, response } = when([], (img) => TopicControl.createTopics(img, [topic("v")], cluster, ids, true))
    expect(records).toEqual([])
    expect(response[0]!.errorCode).toBe(0)
  })
})

describe("TopicControl.deleteTopics / createPartitions / configs / producer ids", () => {
  const base = when([], (img) => TopicControl.createTopics(img, [topic("t")], cluster, ids, false)).records

  it("deletes by name and reports unknown topics", () => {
    const { records, response, after } = when(base, (img) =>
      TopicControl.deleteTopics(img, [
        { name: "t", topicId: null },
        { name: "nope", topicId: null }
      ])
    )
    expect(records.map((r) => r.type)).toEqual(["RemoveTopicRecord"])
    expect(response.map((r) => r.errorCode)).toEqual([0, Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION])
    expect(TopicControl.topicByName(after, "t")).toBeUndefined()
  })

  it("adds partitions and refuses to shrink", () => {
    const grow = when(base, (img) => TopicControl.createPartitions(img, [{ name: "t", count: 5 }], cluster, false))
    expect(TopicControl.topicByName(grow.after, "t")!.partitions.length).toBe(5)
    const shrink = when(base, (img) => TopicControl.createPartitions(img, [{ name: "t", count: 2 }], cluster, false))
    expect(shrink.response[0]!.errorCode).toBe(Errors.ErrorCode.INVALID_PARTITIONS)
  })

  it("alters configs incrementally and validates values", () => {
    const set = when(base, (img) =>
      TopicControl.alterTopicConfigs(img, "t", [{ name: "cleanup.policy", op: 0, value: "compact" }], false)
    )
    expect(TopicControl.topicByName(set.after, "t")!.configs.get("cleanup.policy")).toBe("compact")
    const bad = when(base, (img) =>
      TopicControl.alterTopicConfigs(img, "t", [{ name: "retention.ms", op: 0, value: "soon" }], false)
    )
    expect(bad.response.errorCode).toBe(Errors.ErrorCode.INVALID_CONFIG)
    expect(bad.records).toEqual([])
  })

  it("allocates disjoint producer id blocks", () => {
    const first = when([], (img) => TopicControl.allocateProducerIds(img, 0))
    const second = when(first.records, (img) => TopicControl.allocateProducerIds(img, 0))
    expect(first.response.firstProducerId).toBe(0n)
    expect(second.response.firstProducerId).toBe(TopicControl.PRODUCER_ID_BLOCK)
  })
})

describe("TopicControl.replay", () => {
  it("is deterministic and independent of how the records are batched", () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({ name: fc.constantFrom("a", "b", "c", "d"), op: fc.constantFrom("create", "delete", "grow") }),
          {
            maxLength: 30
          }
        ),
        fc.integer({ min: 1, max: 5 }),
        (ops, chunk) => {
          let image = TopicControl.empty
          const log: TopicControl.TopicsRecord[] = []
          for (const o of ops) {
            const r =
              o.op === "create"
                ? TopicControl.createTopics(image, [topic(o.name)], cluster, ids, false)
                : o.op === "delete"
                  ? TopicControl.deleteTopics(image, [{ name: o.name, topicId: null }])
                  : TopicControl.createPartitions(image, [{ name: o.name, count: 6 }], cluster, false)
            image = TopicControl.replayAll(image, r.records)
            log.push(...r.records)
          }
          let batched = TopicControl.empty
          for (let i = 0; i < log.length; i += chunk) batched = TopicControl.replayAll(batched, log.slice(i, i + chunk))
          expect(batched).toEqual(image)
          expect(TopicControl.replayAll(TopicControl.empty, log)).toEqual(image)
        }
      ),
      { numRuns: 100 }
    )
  })

  it("dies on a record that contradicts the image", () => {
    expect(() =>
      TopicControl.replay(TopicControl.empty, {
        type: "RemoveTopicRecord",
        data: { topicId: "q83vEjRWeJCrze8SNFZ4kA" }
      })
    ).toThrow()
  })
})
