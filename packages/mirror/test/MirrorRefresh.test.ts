/**
 * The periodic mirror refresh (§5.9, §5.3, §6.5): its pure decisions (interval precedence, patterns,
 * topic verdicts, pattern discovery, exclude enforcement, the periodic epoch bump) and its scheduling
 * on a TestClock.
 */
import { MetadataDelta, MetadataImage, MetadataProvenance } from "@clustermirror/metadata-log"
import { MetadataRecords, Uuid } from "@clustermirror/protocol"
import fc from "fast-check"
import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, TestClock } from "effect"
import * as Plan from "../src/internal/refreshPlan.js"
import * as MirrorRefresh from "../src/MirrorRefresh.js"

const ID_A = "q83vEjRWeJCrze8SNFZ4kA"
const ID_B = "AAECAwQFBgcICQoLDA0ODw"

const source = (name: string, topicId: string, partitions: number, isInternal = false): Plan.SourceTopic => ({
  name,
  topicId,
  isInternal,
  partitions: new Map(Array.from({ length: partitions }, (_, i) => [i, { leader: 1, leaderEpoch: 0 }]))
})

describe("refresh interval", () => {
  it("takes the mirror's value, else this broker's dynamic one, else the cluster default, else the static config", () => {
    const key = Plan.REFRESH_INTERVAL_KEY
    const mirror = new Map([[key, "500"]])
    const broker = new Map([[key, "700"]])
    const cluster = new Map([[key, "900"]])
    const none = new Map<string, string>()
    expect(Plan.refreshIntervalMs(mirror, [broker, cluster], 60_000)).toBe(500)
    expect(Plan.refreshIntervalMs(none, [broker, cluster], 60_000)).toBe(700)
    expect(Plan.refreshIntervalMs(none, [none, cluster], 60_000)).toBe(900)
    expect(Plan.refreshIntervalMs(none, [none, none], 60_000)).toBe(60_000)
    // 0 disables the refresh; it is a value like any other, not "unset".
    expect(Plan.refreshIntervalMs(new Map([[key, "0"]]), [broker], 60_000)).toBe(0)
    expect(Plan.refreshIntervalMs(new Map([[key, "soon"]]), [broker], 60_000)).toBe(700)
  })
})

describe("topic patterns", () => {
  it("defaults to no include and the internal-topic exclude; exclude wins", () => {
    const none = Plan.topicPatterns(new Map())
    expect(none.hasInclude).toBe(false)
    expect(none.exclude("__consumer_offsets")).toBe(true)
    const p = Plan.topicPatterns(
      new Map([
        ["mirror.topics.include", "orders-.*,payments"],
        ["mirror.topics.exclude", "orders-secret.*"]
      ])
    )
    expect(p.hasInclude).toBe(true)
    expect(Plan.selected(p, "orders-1")).toBe(true)
    expect(Plan.selected(p, "payments")).toBe(true)
    expect(Plan.selected(p, "payments-2")).toBe(false)
    expect(Plan.selected(p, "orders-secret-1")).toBe(false)
    // A stored exclude replaces the default.
    expect(p.exclude("__consumer_offsets")).toBe(false)
  })

  it("matches nothing with a pattern that does not compile", () => {
    const p = Plan.topicPatterns(new Map([["mirror.topics.include", "orders-(.*"]]))
    expect(Plan.selected(p, "orders-(x")).toBe(false)
  })
})

describe("topic verdict", () => {
  const here: Plan.DestinationTopic = { name: "orders", topicId: ID_A, partitions: 3 }
  it("tells a missing, a recreated, a grown and an unchanged topic apart", () => {
    expect(Plan.topicVerdict(here, undefined)).toEqual({ _tag: "Missing" })
    expect(Plan.topicVerdict(here, source("orders", ID_B, 3))).toEqual({ _tag: "Recreated", sourceTopicId: ID_B })
    expect(Plan.topicVerdict(here, source("orders", ID_A, 5))).toEqual({ _tag: "Present", grow: 5 })
    expect(Plan.topicVerdict(here, source("orders", ID_A, 3))).toEqual({ _tag: "Present", grow: null })
    // Never shrinks: partitions cannot be removed.
    expect(Plan.topicVerdict(here, source("orders", ID_A, 2))).toEqual({ _tag: "Present", grow: null })
  })

  it("cannot call a topic of a source without topic ids recreated", () => {
    expect(Plan.topicVerdict(here, source("orders", Uuid.ZERO, 3))).toEqual({ _tag: "Present", grow: null })
  })
})

describe("pattern discovery", () => {
  const patterns = Plan.topicPatterns(
    new Map([
      ["mirror.topics.include", "orders-.*"],
      ["mirror.topics.exclude", "orders-secret.*"]
    ])
  )
  const destination = new Map<string, { topicId: string; mirrorName: string | null }>([
    ["orders-mirrored", { topicId: ID_A, mirrorName: "m" }],
    ["orders-local", { topicId: ID_A, mirrorName: null }],
    ["orders-stopped-elsewhere", { topicId: ID_B, mirrorName: "other" }]
  ])

  it("starts the selected source topics the mirror does not have, with their id and partition count", () => {
    const found = Plan.discover(
      "m",
      patterns,
      [
        source("orders-new", ID_B, 4),
        source("orders-mirrored", ID_A, 2),
        source("orders-secret-1", ID_B, 1),
        source("payments", ID_B, 1),
        source("orders-empty", ID_B, 0),
        source("orders-internal", ID_B, 1, true),
        source("orders-local", ID_B, 1),
        source("orders-stopped-elsewhere", ID_B, 2)
      ],
      (name) => destination.get(name)
    )
    expect(found.start).toEqual([
      { topicName: "orders-new", topicId: ID_B, numPartitions: 4 },
      { topicName: "orders-stopped-elsewhere", topicId: ID_B, numPartitions: 2 }
    ])
    expect(found.conflicts).toEqual([{ topicName: "orders-local", sourceTopicId: ID_B, destinationTopicId: ID_A }])
  })

  it("discovers nothing without an include list", () => {
    const found = Plan.discover("m", Plan.topicPatterns(new Map()), [source("orders-new", ID_B, 4)], () => undefined)
    expect(found.start).toEqual([])
  })

  it("only ever starts topics the lists select and the mirror does not have, each once", () => {
    const name = fc.constantFrom<string>(
      "orders-1",
      "orders-2",
      "orders-secret-x",
      "payments",
      "__internal",
      "orders-3"
    )
    fc.assert(
      fc.property(
        fc.array(fc.tuple(name, fc.boolean(), fc.integer({ min: 0, max: 4 }))),
        fc.array(fc.tuple(name, fc.constantFrom<string | null>("m", "other", null))),
        (sources, dest) => {
          const byName = new Map(sources.map(([n, zero, parts]) => [n, source(n, zero ? Uuid.ZERO : ID_B, parts)]))
          const here = new Map(dest.map(([n, mirror]) => [n, { topicId: ID_B, mirrorName: mirror }]))
          const found = Plan.discover("m", patterns, [...byName.values()], (n) => here.get(n))
          const names = found.start.map((s) => s.topicName)
          expect(new Set(names).size).toBe(names.length)
          for (const s of found.start) {
            expect(Plan.selected(patterns, s.topicName)).toBe(true)
            expect(here.get(s.topicName)?.mirrorName).not.toBe("m")
            expect(s.numPartitions).toBe(byName.get(s.topicName)!.partitions.size)
            expect(s.numPartitions).toBeGreaterThan(0)
          }
        }
      )
    )
  })
})

describe("exclude enforcement", () => {
  it("stops the mirroring topics the exclude list matches, and only those", () => {
    const patterns = Plan.topicPatterns(
      new Map([
        ["mirror.topics.include", "orders-.*"],
        ["mirror.topics.exclude", "orders-b,orders-c"]
      ])
    )
    expect(
      Plan.excluded(patterns, [
        { name: "orders-c", desiredState: "MIRRORING" },
        { name: "orders-a", desiredState: "MIRRORING" },
        { name: "orders-b", desiredState: "MIRRORING" },
        { name: "orders-b2", desiredState: "MIRRORING" },
        { name: "orders-c", desiredState: "STOPPED" },
        { name: "orders-b", desiredState: "PAUSED" }
      ])
    ).toEqual(["orders-b", "orders-c"])
  })
})

describe("periodic epoch bump", () => {
  it("bumps to source + 10 when the source epoch is within 3 of the destination's", () => {
    const bumps = Plan.epochBumps([
      { topicId: ID_A, partition: 0, destinationEpoch: 0, sourceEpoch: 0 },
      { topicId: ID_A, partition: 1, destinationEpoch: 20, sourceEpoch: 17 },
      { topicId: ID_A, partition: 2, destinationEpoch: 20, sourceEpoch: 18 },
      { topicId: ID_A, partition: 3, destinationEpoch: -1, sourceEpoch: 5 }
    ])
    expect(bumps).toEqual([
      { topicId: ID_A, partition: 0, minLeaderEpoch: 10 },
      { topicId: ID_A, partition: 2, minLeaderEpoch: 28 }
    ])
  })

  it("leaves nothing to bump once the controller applied the bumps", () => {
    const epoch = fc.integer({ min: 0, max: 1000 })
    fc.assert(
      fc.property(fc.array(fc.tuple(epoch, epoch), { maxLength: 20 }), (pairs) => {
        const parts = pairs.map(([d, s], partition) => ({
          topicId: ID_A,
          partition,
          destinationEpoch: d,
          sourceEpoch: s
        }))
        const bumps = new Map(Plan.epochBumps(parts).map((b) => [b.partition, b.minLeaderEpoch]))
        // BumpLeaderEpochs' result: max(MinLeaderEpoch + 1, current).
        const after = parts.map((p) => {
          const min = bumps.get(p.partition)
          return min === undefined ? p : { ...p, destinationEpoch: Math.max(min + 1, p.destinationEpoch) }
        })
        expect(Plan.epochBumps(after)).toEqual([])
        for (const p of after) expect(p.destinationEpoch).toBeGreaterThanOrEqual(p.sourceEpoch)
      })
    )
  })
})

describe("MirrorRefresh scheduling", () => {
  const P = MetadataProvenance.make(1, 1, 0)
  const config = (resourceType: number, resourceName: string, name: string, value: string | null) =>
    MetadataRecords.make("ConfigRecord", { resourceType, resourceName, name, value })
  const MIRROR = MetadataImage.ConfigResourceType.CLUSTER_MIRROR
  const BROKER = MetadataImage.ConfigResourceType.BROKER

  /**
   * A refresh over an image the test changes, on the test's runtime (TestClock: time moves only by
   * `TestClock.adjust`); each tick is seen when it asks for the source, which fails.
   */
  const setup = Effect.gen(function* () {
    let image = MetadataImage.empty
    const ticks: Array<string> = []
    const refresh = yield* MirrorRefresh.MirrorRefresh.make({
      nodeId: 1,
      image: () => image,
      manager: { sourceFailed: () => {}, sourceLeaderKnown: () => {}, stateOf: () => undefined },
      source: (mirror) => {
        ticks.push(mirror)
        throw new Error("no source in this test")
      },
      destination: () => {
        throw new Error("no destination in this test")
      },
      bumpLeaderEpochs: async () => {},
      intervalMs: 60_000
    })
    const replay = (...records: ReadonlyArray<MetadataRecords.MetadataRecord>) => {
      image = MetadataDelta.make(image, records).apply(P)
      refresh.onMetadataUpdate()
    }
    return { refresh, ticks, replay }
  })
  const advance = (ms: number) => TestClock.adjust(Duration.millis(ms))

  it.scoped(
    "ticks every interval of the mirror, reschedules on a new interval, stops at 0 and when the mirror is deleted",
    () =>
      Effect.gen(function* () {
        const { refresh, ticks, replay } = yield* setup
        replay(
          config(MIRROR, "m", "bootstrap.servers", "127.0.0.1:1"),
          config(MIRROR, "m", Plan.REFRESH_INTERVAL_KEY, "100")
        )
        expect(refresh.intervalMs("m")).toBe(100)
        yield* advance(350)
        expect(ticks.length).toBe(3)
        replay(config(MIRROR, "m", Plan.REFRESH_INTERVAL_KEY, "0"))
        yield* advance(1000)
        expect(ticks.length).toBe(3)
        expect(refresh.armedLoops).toBe(0)
        replay(config(MIRROR, "m", Plan.REFRESH_INTERVAL_KEY, "200"))
        yield* advance(450)
        expect(ticks.length).toBe(5)
        replay(config(MIRROR, "m", "bootstrap.servers", null), config(MIRROR, "m", Plan.REFRESH_INTERVAL_KEY, null))
        expect(refresh.intervalMs("m")).toBeUndefined()
        yield* advance(1000)
        expect(ticks).toEqual(["m", "m", "m", "m", "m"])
        expect(refresh.armedLoops).toBe(0)
        yield* Effect.promise(() => refresh.close())
      })
  )

  it.scoped("uses the broker's dynamic interval when the mirror sets none, and keeps one loop per mirror", () =>
    Effect.gen(function* () {
      const { refresh, ticks, replay } = yield* setup
      replay(
        config(MIRROR, "a", "bootstrap.servers", "127.0.0.1:1"),
        config(MIRROR, "b", "bootstrap.servers", "127.0.0.1:1"),
        config(MIRROR, "b", Plan.REFRESH_INTERVAL_KEY, "500"),
        config(BROKER, "", Plan.REFRESH_INTERVAL_KEY, "300")
      )
      expect([refresh.intervalMs("a"), refresh.intervalMs("b")]).toEqual([300, 500])
      replay(config(BROKER, "1", Plan.REFRESH_INTERVAL_KEY, "250"))
      expect(refresh.intervalMs("a")).toBe(250)
      yield* advance(1000)
      expect(ticks.filter((m) => m === "a").length).toBe(4)
      expect(ticks.filter((m) => m === "b").length).toBe(2)
      expect(refresh.armedLoops).toBe(2)
      yield* Effect.promise(() => refresh.close())
      yield* advance(1000)
      expect(ticks.length).toBe(6)
      expect(refresh.armedLoops).toBe(0)
    })
  )

  it.scoped("runs a tick on demand, joins a running one, and spaces the next one from its end", () =>
    Effect.gen(function* () {
      const { refresh, ticks, replay } = yield* setup
      replay(
        config(MIRROR, "m", "bootstrap.servers", "127.0.0.1:1"),
        config(MIRROR, "m", Plan.REFRESH_INTERVAL_KEY, "100")
      )
      yield* advance(60)
      const first = refresh.refresh("m")
      expect(refresh.refresh("m")).toBe(first)
      yield* Effect.promise(() => first)
      expect(ticks.length).toBe(1)
      // The loop restarted at 60: nothing at 100, the next tick at 160.
      yield* advance(50)
      expect(ticks.length).toBe(1)
      yield* advance(50)
      expect(ticks.length).toBe(2)
    })
  )
})
