import { MetadataRecords } from "@clustermirror/protocol"
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import * as fc from "fast-check"
import * as MetadataDelta from "../src/MetadataDelta.js"
import * as MetadataImage from "../src/MetadataImage.js"
import * as MetadataLog from "../src/MetadataLog.js"
import * as MetadataProvenance from "../src/MetadataProvenance.js"
import * as Snapshot from "../src/Snapshot.js"
import { records, uuid } from "./arbitrary.js"

const P = MetadataProvenance.make(41, 2, 1_700_000_000_000)

describe("Snapshot", () => {
  it("round trip: image → records → image is the same image", () => {
    fc.assert(
      fc.property(records(), (rs) => {
        const image = MetadataDelta.make(MetadataImage.empty, rs).apply(P)
        expect(Snapshot.recordsToImage(Snapshot.imageToRecords(image), P)).toEqual(image)
      }),
      { numRuns: 200 }
    )
  })

  it("round trip through the wire: records encode and decode to the same image", () => {
    fc.assert(
      fc.property(records(), (rs) => {
        const image = MetadataDelta.make(MetadataImage.empty, rs).apply(P)
        const bytes = Snapshot.imageToRecords(image).map(MetadataRecords.encode)
        const back = bytes.map((b) => Either.getOrThrow(MetadataRecords.decode(b)))
        expect(Snapshot.recordsToImage(back, P)).toEqual(image)
      }),
      { numRuns: 100 }
    )
  })

  it("round trip through a snapshot file's bytes, provenance included", () => {
    fc.assert(
      fc.property(records(), (rs) => {
        const image = MetadataDelta.make(MetadataImage.empty, rs).apply(P)
        const stored = Either.getOrThrow(MetadataLog.decodeSnapshot(42, MetadataLog.encodeSnapshot(image)))
        expect(stored.provenance).toEqual(P)
        expect(Snapshot.recordsToImage(stored.records, stored.provenance)).toEqual(image)
      }),
      { numRuns: 50 }
    )
  })

  it("writes features first, metadata.version before the rest, and mirror state after a topic's partitions", () => {
    const T = uuid(1)
    const image = MetadataDelta.make(MetadataImage.empty, [
      MetadataRecords.make("FeatureLevelRecord", { name: "mirror.version", featureLevel: 1 }),
      MetadataRecords.make("FeatureLevelRecord", { name: "metadata.version", featureLevel: 25 }),
      MetadataRecords.make("TopicRecord", { name: "orders", topicId: T }),
      MetadataRecords.make("PartitionRecord", { topicId: T, partitionId: 0, replicas: [1], isr: [1], leader: 1 }),
      MetadataRecords.mirrorTopicStateChange(T, "east", "PAUSED"),
      MetadataRecords.make("TopicRecord", { name: "plain", topicId: uuid(2) })
    ]).apply(P)
    const out = Snapshot.imageToRecords(image)
    expect(out.map((r) => r.type)).toEqual([
      "FeatureLevelRecord",
      "FeatureLevelRecord",
      "TopicRecord",
      "PartitionRecord",
      "MirrorTopicStateChangeRecord",
      "TopicRecord"
    ])
    expect(out[0]).toMatchObject({ data: { name: "metadata.version" } })
    expect(out[4]).toMatchObject({ data: { topicId: T, mirrorName: "east", desiredState: 4 } })
  })

  it("client quotas: set, changed and removed by key, the entity the same in any order of its parts", () => {
    const quota = (entity: Array<[string, string | null]>, key: string, value: number, remove = false) =>
      MetadataRecords.make("ClientQuotaRecord", {
        entity: entity.map(([entityType, entityName]) => ({ entityType, entityName })),
        key,
        value,
        remove
      })
    const image = MetadataDelta.make(MetadataImage.empty, [
      quota(
        [
          ["user", "alice"],
          ["client-id", null]
        ],
        "producer_byte_rate",
        100
      ),
      quota(
        [
          ["client-id", null],
          ["user", "alice"]
        ],
        "producer_byte_rate",
        200
      ),
      quota(
        [
          ["client-id", null],
          ["user", "alice"]
        ],
        "consumer_byte_rate",
        300
      ),
      quota([["client-id", "c"]], "consumer_byte_rate", 5),
      quota([["client-id", "c"]], "consumer_byte_rate", 0, true),
      quota([["user", "bob"]], "producer_byte_rate", 0, true)
    ]).apply(P)
    expect(
      MetadataImage.clientQuotasOf(image, [
        { entityType: "user", entityName: "alice" },
        { entityType: "client-id", entityName: null }
      ])
    ).toEqual(
      new Map([
        ["producer_byte_rate", 200],
        ["consumer_byte_rate", 300]
      ])
    )
    expect(image.clientQuotas.size).toBe(1)
    expect(Snapshot.imageToRecords(image)).toEqual([
      quota(
        [
          ["client-id", null],
          ["user", "alice"]
        ],
        "producer_byte_rate",
        200
      ),
      quota(
        [
          ["client-id", null],
          ["user", "alice"]
        ],
        "consumer_byte_rate",
        300
      )
    ])
  })

  it("the empty image has no records", () => {
    expect(Snapshot.imageToRecords(MetadataImage.empty)).toEqual([])
    expect(Snapshot.recordsToImage([])).toEqual(MetadataImage.empty)
  })
})
