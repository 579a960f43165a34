import { describe, expect, it } from "@effect/vitest"
import { Errors, Hashing, MirrorStateRecords } from "@clustermirror/protocol"
import { Either } from "effect"
import * as fc from "fast-check"
import * as Shard from "../src/MirrorStateShard.js"

const N = 3
const SHARD = 1
const MIRROR = "m1"
const TOPIC = "orders"
const TOPIC_ID = Buffer.from("000102030405060708090a0b0c0d0e0f", "hex").toString("base64url")
const OTHER = "payments"
const OTHER_ID = Buffer.from("f0e0d0c0b0a090807060504030201000", "hex").toString("base64url")
const PARTITIONS = 32
const LEADER_EPOCH = 4

const ownedBy = (mirror: string, topicId: string, shard: number) =>
  Array.from({ length: PARTITIONS }, (_, p) => p).filter(
    (p) => Hashing.mirrorStatePartition(mirror, topicId, p, N) === shard
  )
const OWNED = ownedBy(MIRROR, TOPIC_ID, SHARD)
const NOT_OWNED = Array.from({ length: PARTITIONS }, (_, p) => p).filter((p) => !OWNED.includes(p))
const P = OWNED[0]!
const Q = OWNED[1]!
const FOREIGN = NOT_OWNED[0]!

const ctx: Shard.Context = {
  topicId: (name) => (name === TOPIC ? TOPIC_ID : name === OTHER ? OTHER_ID : undefined),
  leaderEpoch: (topicId, partition) =>
    (topicId === TOPIC_ID || topicId === OTHER_ID) && partition >= 0 && partition < PARTITIONS
      ? LEADER_EPOCH
      : undefined
}

const loaded = Shard.empty(SHARD, N, 7)
const key = (p: number, mirror = MIRROR, topicId = TOPIC_ID) => MirrorStateRecords.key(mirror, topicId, p)

const part = (
  partitionIndex: number,
  state: number,
  extra: Partial<Shard.WritePartition> = {}
): Shard.WritePartition => ({ partitionIndex, state, lastMirrorEpoch: -1, leaderEpoch: -1, stateEpoch: -1, ...extra })

const write = (partitions: ReadonlyArray<Shard.WritePartition>, topic = TOPIC, mirrorName = MIRROR) => ({
  mirrorName,
  topics: [{ name: topic, partitions }],
  stoppedTopics: []
})

const read = (partitions: ReadonlyArray<number>, leaderEpoch = -1, topic = TOPIC, mirrorName = MIRROR) => ({
  mirrorName,
  topics: [
    { name: topic, partitions: partitions.map((partitionIndex) => ({ partitionIndex, leaderEpoch, stateEpoch: -1 })) }
  ]
})

const ok = (partitionIndex: number, stateEpoch: number) => ({
  partitionIndex,
  errorCode: 0,
  errorMessage: null,
  stateEpoch
})

/** given(state) → when(decide) → then(records, response), replaying the records like the runtime. */
const given = (state: Shard.State) => ({
  state,
  when: (request: Shard.WriteRequest) => {
    const result = Shard.writeMirrorStates(state, request, ctx)
    return {
      result,
      // biome-ignore lint/suspicious/noThenProperty: the harness speaks given/when/then and is never awaited.
      then: (records: ReadonlyArray<MirrorStateRecords.MirrorStateRecord>, partitions: ReadonlyArray<object>) => {
        expect(result.records).toEqual(records)
        expect(result.response).toEqual({
          throttleTimeMs: 0,
          errorCode: 0,
          errorMessage: null,
          topics: [{ name: request.topics[0]!.name, partitions }]
        })
        return given(Shard.replayAll(state, result.records))
      }
    }
  }
})

describe("MirrorStateShard.writeMirrorStates", () => {
  it("given an empty shard, when a state and an LME are written, then an LME record then a state record", () => {
    given(loaded)
      .when(write([part(P, 0)]))
      .then([MirrorStateRecords.mirrorPartitionState(key(P), "LOG_TRUNCATION")], [ok(P, 1)])
      .when(write([part(P, 2, { stateEpoch: 1 })]))
      .then([MirrorStateRecords.mirrorPartitionState(key(P), "MIRRORING")], [ok(P, 2)])
      .when(write([part(P, 5, { lastMirrorEpoch: 3, leaderEpoch: LEADER_EPOCH })]))
      .then(
        [MirrorStateRecords.lastMirrorEpochs(key(P), 3), MirrorStateRecords.mirrorPartitionState(key(P), "STOPPING")],
        [ok(P, 3)]
      )
  })

  it("State UNKNOWN writes no state record, LastMirrorEpoch -1 no LME record", () => {
    given(loaded)
      .when(write([part(P, -1), part(Q, -1, { lastMirrorEpoch: 2 })]))
      .then([MirrorStateRecords.lastMirrorEpochs(key(Q), 2)], [ok(P, 0), ok(Q, 0)])
  })

  it("a wire FAILED counts as one more failure of the current state; a repeated FAILED keeps the info", () => {
    const g = given(loaded).when(write([part(P, 0), part(P, 7)]))
    expect(g.result.records[1]).toEqual(
      MirrorStateRecords.mirrorPartitionState(key(P), "FAILED", {
        previousState: "LOG_TRUNCATION",
        retryAttempt: 1,
        errorMessage: null
      })
    )
    const after = g.then(g.result.records, [ok(P, 1), ok(P, 2)]).when(write([part(P, 7)]))
    expect(after.result.records).toEqual([
      MirrorStateRecords.mirrorPartitionState(key(P), "FAILED", {
        previousState: "LOG_TRUNCATION",
        retryAttempt: 1,
        errorMessage: null
      })
    ])
  })

  it("a wire write of the current non-FAILED state without failure fields starts the failure count over", () => {
    // LOG_TRUNCATION, FAILED (attempt 1), the retry back to LOG_TRUNCATION and on to MIRRORING (both keep
    // the info), then the reset.
    const g = given(loaded).when(write([part(P, 0), part(P, 7), part(P, 0), part(P, 2)]))
    const retried = Shard.replayAll(loaded, g.result.records)
    expect(Shard.get(retried, key(P))).toMatchObject({ state: "MIRRORING", retryAttempt: 1 })
    given(retried)
      .when(write([part(P, 2, { stateEpoch: 4 })]))
      .then(
        [
          MirrorStateRecords.mirrorPartitionState(key(P), "MIRRORING", {
            previousState: "UNKNOWN",
            retryAttempt: 0,
            errorMessage: null
          })
        ],
        [ok(P, 5)]
      )
  })

  it("a local writer's failure info is stored as given", () => {
    const failure = {
      previousState: "MIRRORING" as const,
      retryAttempt: -1,
      errorMessage: "The source topic is deleted."
    }
    given(loaded)
      .when(write([part(P, 7, { failure })]))
      .then([MirrorStateRecords.mirrorPartitionState(key(P), "FAILED", failure)], [ok(P, 1)])
  })

  it("an invalid transition is refused with INVALID_CLUSTER_MIRROR_STATES and writes nothing", () => {
    given(loaded)
      .when(write([part(P, 2)]))
      .then(
        [],
        [
          {
            partitionIndex: P,
            errorCode: Errors.ErrorCode.INVALID_CLUSTER_MIRROR_STATES,
            errorMessage: "Invalid mirror partition state transition from UNKNOWN to MIRRORING",
            stateEpoch: -1
          }
        ]
      )
  })

  it("an unknown state byte and an LME below -1 are INVALID_REQUEST", () => {
    const r = Shard.writeMirrorStates(loaded, write([part(P, 9), part(Q, 0, { lastMirrorEpoch: -2 })]), ctx)
    expect(r.records).toEqual([])
    expect(r.response.topics[0]!.partitions.map((p) => p.errorCode)).toEqual([
      Errors.ErrorCode.INVALID_REQUEST,
      Errors.ErrorCode.INVALID_REQUEST
    ])
  })

  it("leader-epoch fencing: older → FENCED_LEADER_EPOCH, newer → UNKNOWN_LEADER_EPOCH, equal or -1 pass", () => {
    const r = Shard.writeMirrorStates(
      loaded,
      write([
        part(P, 0, { leaderEpoch: LEADER_EPOCH - 1 }),
        part(P, 0, { leaderEpoch: LEADER_EPOCH + 1 }),
        part(Q, 0, { leaderEpoch: LEADER_EPOCH })
      ]),
      ctx
    )
    expect(r.records).toEqual([MirrorStateRecords.mirrorPartitionState(key(Q), "LOG_TRUNCATION")])
    expect(r.response.topics[0]!.partitions).toEqual([
      {
        partitionIndex: P,
        errorCode: Errors.ErrorCode.FENCED_LEADER_EPOCH,
        errorMessage: `Leader epoch 3 of ${TOPIC}-${P} is older than the current leader epoch 4`,
        stateEpoch: -1
      },
      {
        partitionIndex: P,
        errorCode: Errors.ErrorCode.UNKNOWN_LEADER_EPOCH,
        errorMessage: `Leader epoch 5 of ${TOPIC}-${P} is newer than the coordinator's 4`,
        stateEpoch: -1
      },
      ok(Q, 1)
    ])
  })

  it("state-epoch fencing: a writer that missed a transition is refused with FENCED_STATE_EPOCH", () => {
    const s = given(loaded)
      .when(write([part(P, 0)]))
      .then([MirrorStateRecords.mirrorPartitionState(key(P), "LOG_TRUNCATION")], [ok(P, 1)]).state
    const r = Shard.writeMirrorStates(s, write([part(P, 2, { stateEpoch: 0 })]), ctx)
    expect(r.records).toEqual([])
    expect(r.response.topics[0]!.partitions[0]).toEqual({
      partitionIndex: P,
      errorCode: Errors.ErrorCode.FENCED_STATE_EPOCH,
      errorMessage: `State epoch 0 of ${MIRROR}:${TOPIC}-${P} is stale: the coordinator is at 1; read the state again`,
      stateEpoch: -1
    })
  })

  it("routes: NOT_COORDINATOR for keys of other shards and on an unloaded shard, UNKNOWN_TOPIC_OR_PARTITION for unknown ones", () => {
    const r = Shard.writeMirrorStates(loaded, write([part(FOREIGN, 0), part(PARTITIONS, 0)]), ctx)
    expect(r.records).toEqual([])
    expect(r.response.topics[0]!.partitions.map((p) => p.errorCode)).toEqual([
      Errors.ErrorCode.NOT_COORDINATOR,
      Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    ])
    const unknownTopic = Shard.writeMirrorStates(loaded, write([part(P, 0)], "nope"), ctx)
    expect(unknownTopic.response.topics[0]!.partitions[0]!.errorCode).toBe(Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    const unloaded = Shard.writeMirrorStates(Shard.empty(SHARD, N), write([part(P, 0)]), ctx)
    expect(unloaded.response.topics[0]!.partitions[0]!.errorCode).toBe(Errors.ErrorCode.NOT_COORDINATOR)
    expect(unloaded.records).toEqual([])
  })
})

describe("MirrorStateShard.readMirrorStates", () => {
  it("round trip: what was written reads back; nothing stored reads as UNKNOWN with PreviousState -1", () => {
    const failure = { previousState: "MIRRORING" as const, retryAttempt: 3, errorMessage: "Fetch IO error" }
    const s = Shard.replayAll(
      loaded,
      Shard.writeMirrorStates(loaded, write([part(P, 7, { failure, lastMirrorEpoch: 2 })]), ctx).records
    )
    expect(Shard.readMirrorStates(s, read([P, Q, FOREIGN]), ctx)).toEqual({
      throttleTimeMs: 0,
      errorCode: 0,
      errorMessage: null,
      topics: [
        {
          name: TOPIC,
          partitions: [
            {
              partitionIndex: P,
              lastMirrorEpoch: 2,
              state: 7,
              errorCode: 0,
              previousState: 2,
              retryAttempt: 3,
              errorMessage: "Fetch IO error",
              stateEpoch: 1
            },
            {
              partitionIndex: Q,
              lastMirrorEpoch: -1,
              state: -1,
              errorCode: 0,
              previousState: -1,
              retryAttempt: 0,
              errorMessage: null,
              stateEpoch: 0
            },
            {
              partitionIndex: FOREIGN,
              lastMirrorEpoch: -1,
              state: -1,
              errorCode: Errors.ErrorCode.NOT_COORDINATOR,
              previousState: -1,
              retryAttempt: 0,
              errorMessage: `This broker does not coordinate the mirror state of ${MIRROR}:${TOPIC}-${FOREIGN}`,
              stateEpoch: -1
            }
          ]
        }
      ]
    })
  })

  it("a stale reader's leader epoch is fenced", () => {
    const r = Shard.readMirrorStates(loaded, read([P], LEADER_EPOCH - 1), ctx)
    expect(r.topics[0]!.partitions[0]!.errorCode).toBe(Errors.ErrorCode.FENCED_LEADER_EPOCH)
  })
})

describe("MirrorStateShard.deleteMirror and replay", () => {
  const OTHER_OWNED = ownedBy(MIRROR, OTHER_ID, SHARD)[0]!
  const M2_OWNED = ownedBy("m2", TOPIC_ID, SHARD)[0]!

  it("given partitions of two mirrors, when one is deleted, then tombstones of both types for each of its keys", () => {
    let s = loaded
    s = Shard.replayAll(
      s,
      Shard.writeMirrorStates(s, write([part(P, 0), part(Q, 0, { lastMirrorEpoch: 1 })]), ctx).records
    )
    s = Shard.replayAll(s, Shard.writeMirrorStates(s, write([part(OTHER_OWNED, 0)], OTHER), ctx).records)
    s = Shard.replayAll(s, Shard.writeMirrorStates(s, write([part(M2_OWNED, 0)], TOPIC, "m2"), ctx).records)
    const result = Shard.deleteMirror(s, MIRROR)
    const keys = [key(P), key(Q), key(OTHER_OWNED, MIRROR, OTHER_ID)].sort((a, b) =>
      a.topicId === b.topicId ? a.partition - b.partition : a.topicId < b.topicId ? -1 : 1
    )
    expect(result.response).toEqual(keys)
    expect(result.records).toEqual(keys.flatMap(MirrorStateRecords.tombstones))
    const after = Shard.replayAll(s, result.records)
    expect(Shard.entries(after).map((e) => e.key)).toEqual([key(M2_OWNED, "m2")])
    expect(Shard.get(after, key(P))).toEqual({
      state: "UNKNOWN",
      previousState: "UNKNOWN",
      retryAttempt: 0,
      errorMessage: null,
      lastMirrorEpoch: -1,
      stateEpoch: 0
    })
    expect(Shard.deleteMirror(after, MIRROR).records).toEqual([])
  })

  it("a state tombstone alone keeps the LME", () => {
    const s = Shard.replayAll(loaded, [
      MirrorStateRecords.lastMirrorEpochs(key(P), 4),
      MirrorStateRecords.mirrorPartitionState(key(P), "STOPPED"),
      { type: "MirrorPartitionState", key: key(P), value: null }
    ])
    expect(Shard.get(s, key(P))).toMatchObject({ state: "UNKNOWN", lastMirrorEpoch: 4 })
  })

  it("replay dies on a key of another partition and on an unknown state byte", () => {
    expect(() => Shard.replay(loaded, MirrorStateRecords.lastMirrorEpochs(key(FOREIGN), 1))).toThrow(
      /does not belong to __mirror_state partition 1/
    )
    expect(() =>
      Shard.replay(loaded, {
        type: "MirrorPartitionState",
        key: key(P),
        value: { state: 42, previousState: -1, retryAttempt: 0, errorMessage: null }
      })
    ).toThrow(/unknown state 42/)
  })

  it("PreviousState 16 (the prototype's schema default) reads as -1", () => {
    const s = Shard.replay(loaded, {
      type: "MirrorPartitionState",
      key: key(P),
      value: { state: 2, previousState: 16, retryAttempt: 0, errorMessage: null }
    })
    expect(Shard.readMirrorStates(s, read([P]), ctx).topics[0]!.partitions[0]!.previousState).toBe(-1)
  })

  it("loadFrom replays a partition on leadership gain; empty drops it on loss", () => {
    const records = Shard.writeMirrorStates(loaded, write([part(P, 0)]), ctx).records
    const s = Shard.loadFrom(SHARD, N, 9, records)
    expect(s.leaderEpoch).toBe(9)
    expect(Shard.get(s, key(P)).state).toBe("LOG_TRUNCATION")
    expect(Shard.entries(Shard.empty(SHARD, N))).toEqual([])
  })
})

describe("MirrorStateShard properties", () => {
  // Random write requests over a few owned and foreign partitions of two topics.
  const arbPartition = fc.record({
    partitionIndex: fc.constantFrom(P, Q, FOREIGN, OWNED[2] ?? P),
    state: fc.integer({ min: -1, max: 8 }),
    lastMirrorEpoch: fc.integer({ min: -2, max: 20 }),
    leaderEpoch: fc.constantFrom(-1, LEADER_EPOCH - 1, LEADER_EPOCH),
    stateEpoch: fc.constantFrom(-1, -1, 0, 1, 2)
  })
  const arbRequest = fc.record({
    mirrorName: fc.constantFrom(MIRROR, "m2"),
    topics: fc.array(
      fc.record({ name: fc.constantFrom(TOPIC, OTHER), partitions: fc.array(arbPartition, { maxLength: 5 }) }),
      { maxLength: 2 }
    ),
    stoppedTopics: fc.constant([])
  })
  const arbOp = fc.oneof(
    { weight: 5, arbitrary: arbRequest.map((r) => ({ _tag: "write" as const, r })) },
    { weight: 1, arbitrary: fc.constantFrom(MIRROR, "m2").map((m) => ({ _tag: "delete" as const, m })) }
  )

  /** Runs decisions, replaying each one's records; returns every record written and the final state. */
  type Op = typeof arbOp extends fc.Arbitrary<infer A> ? A : never
  const run = (ops: ReadonlyArray<Op>) => {
    let s = loaded
    const all: Array<MirrorStateRecords.MirrorStateRecord> = []
    for (const op of ops) {
      if (op._tag === "delete") {
        const r = Shard.deleteMirror(s, op.m)
        s = Shard.replayAll(s, r.records)
        all.push(...r.records)
        continue
      }
      const r = Shard.writeMirrorStates(s, op.r, ctx)
      const after = Shard.replayAll(s, r.records)
      // The state the decision assumed is the state its records produce: every accepted partition
      // reads back with the state it asked for and the epoch the answer announced.
      const lastByKey = new Map<string, { state: number; stateEpoch: number; lme: number }>()
      op.r.topics.forEach((t, ti) => {
        t.partitions.forEach((p, pi) => {
          const answer = r.response.topics[ti]!.partitions[pi]!
          if (answer.errorCode !== 0) return
          const k = `${t.name}/${p.partitionIndex}`
          const prev = lastByKey.get(k)
          lastByKey.set(k, {
            state: p.state === -1 ? (prev?.state ?? Number.NaN) : p.state,
            stateEpoch: answer.stateEpoch,
            lme: p.lastMirrorEpoch === -1 ? (prev?.lme ?? Number.NaN) : p.lastMirrorEpoch
          })
        })
      })
      for (const [k, expected] of lastByKey) {
        const [name, index] = k.split("/")
        const got = Shard.readMirrorStates(after, read([Number(index)], -1, name, op.r.mirrorName), ctx).topics[0]!
          .partitions[0]!
        expect(got.errorCode).toBe(0)
        expect(got.stateEpoch).toBe(expected.stateEpoch)
        if (!Number.isNaN(expected.state)) expect(got.state).toBe(expected.state)
        if (!Number.isNaN(expected.lme)) expect(got.lastMirrorEpoch).toBe(expected.lme)
      }
      s = after
      all.push(...r.records)
    }
    return { state: s, records: all }
  }

  it("decide then replay never dies, and replay gives the state each decision assumed", () => {
    fc.assert(
      fc.property(fc.array(arbOp, { maxLength: 15 }), (ops) => void run(ops)),
      { numRuns: 300 }
    )
  })

  it("replay is deterministic: loading the written records gives the same shard, twice", () => {
    fc.assert(
      fc.property(fc.array(arbOp, { maxLength: 15 }), (ops) => {
        const { state, records } = run(ops)
        const a = Shard.loadFrom(SHARD, N, 7, records)
        const b = Shard.loadFrom(SHARD, N, 7, records)
        expect(Shard.entries(a)).toEqual(Shard.entries(state))
        expect(Shard.entries(b)).toEqual(Shard.entries(a))
      }),
      { numRuns: 200 }
    )
  })

  it("the shard's records encode and decode through MirrorStateRecords unchanged", () => {
    fc.assert(
      fc.property(fc.array(arbOp, { maxLength: 15 }), (ops) => {
        const { records } = run(ops)
        for (const record of records) {
          const bytes = MirrorStateRecords.encode(record)
          expect(Either.getOrThrow(MirrorStateRecords.decode(bytes.key, bytes.value))).toEqual(record)
        }
        const decoded = records.map((r) => {
          const bytes = MirrorStateRecords.encode(r)
          return Either.getOrThrow(MirrorStateRecords.decode(bytes.key, bytes.value))
        })
        expect(Shard.entries(Shard.loadFrom(SHARD, N, 7, decoded))).toEqual(
          Shard.entries(Shard.loadFrom(SHARD, N, 7, records))
        )
      }),
      { numRuns: 100 }
    )
  })
})
