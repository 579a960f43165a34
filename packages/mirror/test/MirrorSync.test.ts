import { DescribeClusterMirrors } from "@clustermirror/protocol"
import { Either } from "effect"
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import * as MirrorSync from "../src/MirrorSync.js"

const DYNAMIC = MirrorSync.DYNAMIC_TOPIC_CONFIG
const DEFAULT = 5
const exclude = MirrorSync.patterns(MirrorSync.DEFAULT_TOPIC_PROPERTIES_EXCLUDE)

/** Applies changes to a topic's dynamic configs as the controller does. */
const apply = (
  dynamic: ReadonlyMap<string, string | null>,
  changes: ReadonlyArray<{ readonly name: string; readonly operation: "SET" | "DELETE"; readonly value: string | null }>
) => {
  const out = new Map(dynamic)
  for (const c of changes) {
    if (c.operation === "SET") out.set(c.name, c.value)
    else out.delete(c.name)
  }
  return out
}

const entries = (m: ReadonlyMap<string, string | null>, source = DYNAMIC) =>
  [...m].map(([name, value]) => ({ name, value, source }))

describe("patterns", () => {
  it("match whole names, like Java's Pattern.matches", () => {
    const p = MirrorSync.patterns("retention\\..*, min.insync.replicas")
    expect(p.some((r) => r.test("retention.ms"))).toBe(true)
    expect(p.some((r) => r.test("min.insync.replicas"))).toBe(true)
    expect(p.some((r) => r.test("x.retention.ms"))).toBe(false)
    expect(p.some((r) => r.test("min.insync.replicas.extra"))).toBe(false)
    expect(MirrorSync.patterns("")).toEqual([])
  })

  it("throw on an invalid regex", () => {
    expect(() => MirrorSync.patterns("a(")).toThrow()
  })
})

describe("topicConfigChanges", () => {
  it("sets changed and new dynamic keys, deletes dynamic keys the source dropped, ignores defaults", () => {
    const source = [
      { name: "retention.ms", value: "1000", source: DYNAMIC },
      { name: "cleanup.policy", value: "compact", source: DYNAMIC },
      { name: "segment.bytes", value: "1073741824", source: DEFAULT }
    ]
    const destination = [
      { name: "retention.ms", value: "604800000", source: DEFAULT },
      { name: "cleanup.policy", value: "compact", source: DYNAMIC },
      { name: "max.message.bytes", value: "2000", source: DYNAMIC },
      { name: "segment.bytes", value: "5000", source: DEFAULT }
    ]
    expect(MirrorSync.topicConfigChanges(source, destination, exclude)).toEqual([
      { name: "max.message.bytes", operation: "DELETE", value: null },
      { name: "retention.ms", operation: "SET", value: "1000" }
    ])
  })

  it("never sets or deletes excluded keys, mirror.name or other mirror.* topic configs", () => {
    const source = [
      { name: "min.insync.replicas", value: "2", source: DYNAMIC },
      { name: "mirror.name", value: "dr", source: DYNAMIC },
      { name: "message.timestamp.type", value: "LogAppendTime", source: DYNAMIC }
    ]
    const destination = [
      { name: "unclean.leader.election.enable", value: "true", source: DYNAMIC },
      { name: "mirror.replication.throttled.replicas", value: "*", source: DYNAMIC }
    ]
    expect(MirrorSync.topicConfigChanges(source, destination, exclude)).toEqual([])
  })

  it("applied, makes the non-excluded dynamic configs equal and leaves excluded ones as they were", () => {
    const key = fc.constantFrom(
      "retention.ms",
      "cleanup.policy",
      "max.message.bytes",
      "min.insync.replicas",
      "mirror.name",
      "segment.ms"
    )
    const configs = fc.dictionary(key, fc.option(fc.constantFrom("1", "2", "compact"), { nil: null }))
    fc.assert(
      fc.property(configs, configs, (s, d) => {
        const src = new Map(Object.entries(s))
        const dst = new Map(Object.entries(d))
        const changes = MirrorSync.topicConfigChanges(entries(src), entries(dst), exclude)
        const after = apply(dst, changes)
        const owned = (m: ReadonlyMap<string, string | null>) =>
          new Map([...m].filter(([k]) => !MirrorSync.isExcludedProperty(k, exclude)))
        const local = (m: ReadonlyMap<string, string | null>) =>
          new Map([...m].filter(([k]) => MirrorSync.isExcludedProperty(k, exclude)))
        expect(owned(after)).toEqual(owned(src))
        expect(local(after)).toEqual(local(dst))
        // A second run has nothing left to do.
        expect(MirrorSync.topicConfigChanges(entries(src), entries(after), exclude)).toEqual([])
      })
    )
  })
})

describe("group selection and states", () => {
  it("include ∧ ¬exclude, exclude wins", () => {
    const include = MirrorSync.patterns("app-.*,billing")
    const excluded = MirrorSync.patterns("app-test.*")
    expect(MirrorSync.selectGroup("app-orders", include, excluded)).toBe(true)
    expect(MirrorSync.selectGroup("billing", include, excluded)).toBe(true)
    expect(MirrorSync.selectGroup("app-test-1", include, excluded)).toBe(false)
    expect(MirrorSync.selectGroup("other", include, excluded)).toBe(false)
    expect(MirrorSync.selectGroup("any", MirrorSync.patterns(MirrorSync.DEFAULT_GROUPS_INCLUDE), [])).toBe(true)
  })

  it("members own the offsets in rebalancing and stable states of both protocols, not in Empty or Dead", () => {
    for (const s of ["Stable", "PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling", "STABLE"])
      expect(MirrorSync.isActiveGroupState(s)).toBe(true)
    for (const s of ["Empty", "Dead", ""]) expect(MirrorSync.isActiveGroupState(s)).toBe(false)
  })

  it("consumer groups are those of protocol type consumer or none (offsets only)", () => {
    expect(MirrorSync.isConsumerGroup("consumer")).toBe(true)
    expect(MirrorSync.isConsumerGroup("")).toBe(true)
    expect(MirrorSync.isConsumerGroup("connect")).toBe(false)
  })
})

describe("planGroupOffsets", () => {
  const bounds = { logStartOffset: 10n, logEndOffset: 100n, latestEpoch: 4 }
  const committed = (topic: string, partition: number, offset: bigint, leaderEpoch = 2) => ({
    topic,
    partition,
    offset,
    leaderEpoch,
    metadata: "m"
  })

  it("keeps offsets inside the log with their epoch, clamps outside ones, skips non-mirroring partitions", () => {
    const plan = MirrorSync.planGroupOffsets(
      [
        committed("t", 2, 5n),
        committed("t", 0, 50n),
        committed("t", 1, 500n),
        committed("paused", 0, 50n),
        committed("u", 0, 10n)
      ],
      (topic) => topic !== "paused",
      (topic) => (topic === "u" ? undefined : bounds)
    )
    expect(plan).toEqual([
      {
        _tag: "Commit",
        topic: "t",
        partition: 0,
        sourceOffset: 50n,
        offset: 50n,
        leaderEpoch: 2,
        clamped: false,
        metadata: "m"
      },
      {
        _tag: "Commit",
        topic: "t",
        partition: 1,
        sourceOffset: 500n,
        offset: 100n,
        leaderEpoch: 4,
        clamped: true,
        metadata: "m"
      },
      {
        _tag: "Commit",
        topic: "t",
        partition: 2,
        sourceOffset: 5n,
        offset: 10n,
        leaderEpoch: "lookup",
        clamped: true,
        metadata: "m"
      },
      { _tag: "Skip", topic: "u", partition: 0, reason: "destination log bounds unknown" }
    ])
  })

  it("skips an offset past an empty destination log whose epoch is unknown", () => {
    const plan = MirrorSync.planGroupOffsets(
      [committed("t", 0, 7n)],
      () => true,
      () => ({ logStartOffset: 0n, logEndOffset: 0n, latestEpoch: -1 })
    )
    expect(plan).toEqual([{ _tag: "Skip", topic: "t", partition: 0, reason: "destination leader epoch unknown" }])
  })

  it("every committed offset lies in [log start, log end], equal to the source's unless clamped", () => {
    const arb = fc.record({
      start: fc.bigInt(0n, 1000n),
      length: fc.bigInt(0n, 1000n),
      offset: fc.bigInt(0n, 3000n),
      epoch: fc.integer({ min: -1, max: 9 })
    })
    fc.assert(
      fc.property(arb, ({ start, length, offset, epoch }) => {
        const b = { logStartOffset: start, logEndOffset: start + length, latestEpoch: epoch }
        const [p] = MirrorSync.planGroupOffsets(
          [committed("t", 0, offset)],
          () => true,
          () => b
        )
        if (p === undefined) throw new Error("no plan")
        if (p._tag === "Skip") {
          expect(offset > b.logEndOffset && epoch < 0).toBe(true)
          return
        }
        expect(p.offset >= b.logStartOffset && p.offset <= b.logEndOffset).toBe(true)
        expect(p.clamped).toBe(p.offset !== offset)
        if (!p.clamped) expect(p.leaderEpoch).toBe(2)
      })
    )
  })
})

describe("group sync status", () => {
  const status = (group: string, state: MirrorSync.GroupSyncState): MirrorSync.GroupSyncStatus => ({
    group,
    state,
    detail: state === "SKIPPED_ACTIVE" ? "Stable" : null,
    timeMs: 20,
    lastSyncedMs: state === "SYNCED" ? 20 : -1,
    offsets: state === "SYNCED" ? [{ topic: "t", partition: 0, sourceOffset: 5n, offset: 5n, leaderEpoch: 1 }] : []
  })

  it("a run replaces a mirror's statuses; the store answers sorted by group", () => {
    const store = new MirrorSync.GroupSyncStatusStore()
    store.replace("dr", [status("b", "SYNCED"), status("a", "FILTERED")])
    expect(store.statuses("dr").map((s) => s.group)).toEqual(["a", "b"])
    expect(store.lastSyncedMs("dr", "b")).toBe(20)
    store.replace("dr", [status("a", "FILTERED")])
    expect(store.statuses("dr").map((s) => s.group)).toEqual(["a"])
    expect(store.lastSyncedMs("dr", "b")).toBe(-1)
    store.retain(new Set())
    expect(store.statuses("dr")).toEqual([])
  })

  it("fills DescribeClusterMirrors for described mirrors only, and survives the wire", () => {
    const store = new MirrorSync.GroupSyncStatusStore()
    store.replace("dr", [status("g", "SYNCED"), status("live", "SKIPPED_ACTIVE")])
    const response: DescribeClusterMirrors.Response = {
      throttleTimeMs: 0,
      errorCode: 0,
      errorMessage: null,
      mirrors: [
        {
          errorCode: 0,
          mirrorName: "dr",
          authorizedOperations: -2147483648,
          topics: [],
          groupSyncStatuses: [],
          aclSyncStatuses: []
        },
        {
          errorCode: 137,
          mirrorName: "gone",
          authorizedOperations: -2147483648,
          topics: [],
          groupSyncStatuses: [],
          aclSyncStatuses: []
        }
      ],
      lookupResults: []
    }
    const filled = MirrorSync.withGroupSync(response, store)
    const bytes = Either.getOrThrow(DescribeClusterMirrors.Response.encode(0, filled))
    const back = Either.getOrThrow(DescribeClusterMirrors.Response.decode(0, bytes))
    expect(back.mirrors[0]!.groupSyncStatuses).toEqual([
      {
        groupId: "g",
        state: "SYNCED",
        detail: null,
        timeMs: 20n,
        lastSyncedMs: 20n,
        offsets: [{ topicName: "t", partitionIndex: 0, sourceOffset: 5n, offset: 5n, leaderEpoch: 1 }]
      },
      { groupId: "live", state: "SKIPPED_ACTIVE", detail: "Stable", timeMs: 20n, lastSyncedMs: -1n, offsets: [] }
    ])
    expect(back.mirrors[1]!.groupSyncStatuses).toEqual([])
  })
})
