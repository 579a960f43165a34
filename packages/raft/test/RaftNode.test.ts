import { describe, expect, it } from "@effect/vitest"
import * as QuorumState from "../src/QuorumState.js"
import * as RaftConfig from "../src/RaftConfig.js"
import { ErrorCode } from "../src/RaftError.js"
import type { RaftEvent, RaftOutput } from "../src/RaftEvent.js"
import * as RaftLog from "../src/RaftLog.js"
import type { FetchRequest, LogRecord, RaftRequest, VoteRequest } from "../src/RaftMessages.js"
import * as RaftNode from "../src/RaftNode.js"

type V = string
const voters = [1, 2, 3]
const config = (id: number) => RaftConfig.make(id, voters, { electionTimeoutMs: 100, fetchTimeoutMs: 200 })

/** A voter fed events one by one; `outputs` are those of the last event. */
const voter = (id: number, quorum = QuorumState.initial, log = RaftLog.empty) => {
  let r = RaftNode.init<V>(config(id), quorum, log, 0, 1)
  let now = 0
  return {
    get state() {
      return r.state
    },
    get outputs() {
      return r.outputs
    },
    on(event: RaftEvent<V>, at = now + 1) {
      now = at
      r = RaftNode.step(r.state, { now, random: now * 7919, event })
      return r.outputs
    }
  }
}

const vote = (from: number, to: number, epoch: number, last: [number, number], preVote = false): VoteRequest => ({
  _tag: "VoteRequest",
  clusterId: "clustermirror",
  voterId: to,
  replicaEpoch: epoch,
  replicaId: from,
  lastOffsetEpoch: last[0],
  lastOffset: last[1],
  preVote: preVote
})

const tags = (outputs: ReadonlyArray<RaftOutput<V>>) => outputs.map((o) => o._tag)
const responses = (outputs: ReadonlyArray<RaftOutput<V>>) =>
  outputs.flatMap((o) => (o._tag === "Respond" || o._tag === "RespondFetch" ? [o.response] : []))
const sent = (outputs: ReadonlyArray<RaftOutput<V>>): Array<RaftRequest> =>
  outputs.flatMap((o) => (o._tag === "Send" ? [o.message] : []))

const records = (epoch: number, from: number, count: number): Array<LogRecord<V>> =>
  Array.from({ length: count }, (_, i) => ({ _tag: "Data", offset: from + i, epoch: epoch, value: `r${from + i}` }))

/** Makes voter 1 leader of epoch 1 in a quorum of 3 (its pre-vote and vote granted by voter 2). */
const leader = () => {
  const v = voter(1)
  v.on({ _tag: "TimerFired", timer: "election" }, 1000)
  const preVote = sent(v.outputs).find((m) => m._tag === "VoteRequest")
  if (preVote === undefined) throw new Error("no pre-vote")
  v.on({
    _tag: "Response",
    from: 2,
    request: preVote,
    response: { _tag: "VoteResponse", errorCode: 0, leaderId: -1, leaderEpoch: 0, voteGranted: true }
  })
  const request = sent(v.outputs).find((m) => m._tag === "VoteRequest")
  if (request === undefined) throw new Error("no vote")
  v.on({
    _tag: "Response",
    from: 2,
    request,
    response: { _tag: "VoteResponse", errorCode: 0, leaderId: -1, leaderEpoch: 1, voteGranted: true }
  })
  return v
}

const fetch = (from: number, epoch: number, offset: number, lastEpoch: number): FetchRequest => ({
  _tag: "FetchRequest",
  clusterId: "clustermirror",
  replicaId: from,
  replicaEpoch: epoch,
  maxWaitMs: 500,
  currentLeaderEpoch: epoch,
  fetchOffset: offset,
  lastFetchedEpoch: lastEpoch,
  logStartOffset: 0
})

describe("RaftNode votes", () => {
  it("a voter votes once per epoch, and persists the vote before answering", () => {
    const v = voter(3)
    const first = v.on({ _tag: "Request", from: 1, request: vote(1, 3, 1, [0, 0]) })
    expect(tags(first).indexOf("PersistQuorumState")).toBeLessThan(tags(first).indexOf("Respond"))
    expect(first.find((o) => o._tag === "PersistQuorumState")).toMatchObject({ state: { leaderEpoch: 1, votedId: 1 } })
    expect(responses(first)).toEqual([expect.objectContaining({ voteGranted: true, leaderEpoch: 1 })])
    const second = v.on({ _tag: "Request", from: 2, request: vote(2, 3, 1, [0, 0]) })
    expect(responses(second)).toEqual([expect.objectContaining({ voteGranted: false, leaderEpoch: 1 })])
    expect(tags(second)).not.toContain("PersistQuorumState")
    // The same candidate asking again (a duplicate) gets the same answer.
    expect(responses(v.on({ _tag: "Request", from: 1, request: vote(1, 3, 1, [0, 0]) }))).toEqual([
      expect.objectContaining({ voteGranted: true })
    ])
  })

  it("refuses a candidate whose log is behind (last epoch first, then end offset)", () => {
    const log = RaftLog.append(RaftLog.empty, records(2, 0, 5))
    const v = voter(3, { leaderEpoch: 2, votedId: -1, leaderId: -1 }, log)
    expect(responses(v.on({ _tag: "Request", from: 1, request: vote(1, 3, 3, [2, 4]) }))[0]).toMatchObject({
      voteGranted: false
    })
    expect(responses(v.on({ _tag: "Request", from: 2, request: vote(2, 3, 3, [1, 100]) }))[0]).toMatchObject({
      voteGranted: false
    })
    // The refusals bumped the epoch and voted for no one: a candidate with a log as long still wins.
    expect(v.state.quorum).toEqual({ leaderEpoch: 3, votedId: -1, leaderId: -1 })
    expect(responses(v.on({ _tag: "Request", from: 1, request: vote(1, 3, 3, [2, 5]) }))[0]).toMatchObject({
      voteGranted: true
    })
  })

  it("a pre-vote changes nothing, and a follower with a live leader refuses it", () => {
    const v = voter(3, { leaderEpoch: 1, votedId: -1, leaderId: 1 })
    expect(v.state.role._tag).toBe("Follower")
    // Restarted from its quorum state, it has not heard from that leader yet: it grants.
    expect(responses(v.on({ _tag: "Request", from: 2, request: vote(2, 3, 2, [0, 0], true) }))[0]).toMatchObject({
      voteGranted: true
    })
    v.on({
      _tag: "Request",
      from: 1,
      request: { _tag: "BeginQuorumEpochRequest", clusterId: "clustermirror", voterId: 3, leaderId: 1, leaderEpoch: 1 }
    })
    const outputs = v.on({ _tag: "Request", from: 2, request: vote(2, 3, 2, [0, 0], true) })
    expect(responses(outputs)[0]).toMatchObject({ voteGranted: false, leaderId: 1, leaderEpoch: 1 })
    expect(tags(outputs)).not.toContain("PersistQuorumState")
    // After the fetch timeout it grants pre-votes (as a prospective itself), still without persisting.
    v.on({ _tag: "TimerFired", timer: "fetchTimeout" }, 1000)
    expect(v.state.role._tag).toBe("Prospective")
    const later = v.on({ _tag: "Request", from: 2, request: vote(2, 3, 2, [0, 0], true) })
    expect(responses(later)[0]).toMatchObject({ voteGranted: true, leaderEpoch: 1 })
    expect(v.state.quorum.leaderEpoch).toBe(1)
  })

  it("answers a stale epoch with FENCED_LEADER_EPOCH and a foreign cluster with INCONSISTENT_CLUSTER_ID", () => {
    const v = voter(3, { leaderEpoch: 5, votedId: -1, leaderId: -1 })
    expect(responses(v.on({ _tag: "Request", from: 1, request: vote(1, 3, 4, [0, 0]) }))[0]).toMatchObject({
      errorCode: ErrorCode.FENCED_LEADER_EPOCH,
      leaderEpoch: 5
    })
    expect(
      responses(v.on({ _tag: "Request", from: 1, request: { ...vote(1, 3, 6, [0, 0]), clusterId: "other" } }))[0]
    ).toMatchObject({ errorCode: ErrorCode.INCONSISTENT_CLUSTER_ID, voteGranted: false })
  })
})

describe("RaftNode leader", () => {
  it("starts its epoch with a LeaderChange record and BeginQuorumEpoch to the others", () => {
    const v = leader()
    expect(v.state.role._tag).toBe("Leader")
    const append = v.outputs.find((o) => o._tag === "AppendLog")
    expect(append).toMatchObject({ records: [{ _tag: "LeaderChange", offset: 0, epoch: 1, value: { leaderId: 1 } }] })
    expect(sent(v.outputs).filter((m) => m._tag === "BeginQuorumEpochRequest").length).toBe(2)
    expect(v.outputs.find((o) => o._tag === "PersistQuorumState")).toMatchObject({
      state: { leaderEpoch: 1, leaderId: 1 }
    })
  })

  it("advances the HW on a majority of durable offsets, counting its own flushed offset only", () => {
    const v = leader()
    v.on({ _tag: "Append", values: ["a", "b"] })
    // Voter 2 has everything (fetch offset 3) but the leader's own records are not flushed: no HW.
    v.on({ _tag: "Request", from: 2, request: fetch(2, 1, 3, 1) })
    expect(v.state.highWatermark).toBe(-1)
    v.on({ _tag: "FlushCompleted", endOffset: 3 })
    expect(v.state.highWatermark).toBe(3)
    expect(v.outputs).toContainEqual({ _tag: "HighWatermark", offset: 3 })
  })

  it("answers a diverging follower with DivergingEpoch, and one below the log start with SnapshotId", () => {
    const v = leader()
    v.on({ _tag: "Append", values: ["a", "b", "c"] })
    v.on({ _tag: "FlushCompleted", endOffset: 4 })
    // Follower at offset 6 of epoch 1: the leader's epoch 1 ends at 4.
    const diverging = responses(v.on({ _tag: "Request", from: 2, request: fetch(2, 1, 6, 1) }))[0]
    expect(diverging).toMatchObject({ divergingEpoch: { epoch: 1, endOffset: 4 } })
    v.on({ _tag: "Request", from: 2, request: fetch(2, 1, 4, 1) })
    expect(v.state.highWatermark).toBe(4)
    const snap = v.on({ _tag: "CreateSnapshot", endOffset: 3 })
    expect(snap).toEqual([{ _tag: "CreateSnapshot", snapshotId: { endOffset: 3, epoch: 1 } }])
    const below = responses(v.on({ _tag: "Request", from: 3, request: fetch(3, 1, 0, 0) }))[0]
    expect(below).toMatchObject({ snapshotId: { endOffset: 3, epoch: 1 }, divergingEpoch: null })
  })

  it("describes the quorum as the leader sees it", () => {
    const v = leader()
    v.on({ _tag: "FlushCompleted", endOffset: 1 })
    v.on({ _tag: "Request", from: 2, request: fetch(2, 1, 1, 1) }, 2000)
    expect(RaftNode.describeQuorum(v.state)).toEqual({
      leaderId: 1,
      leaderEpoch: 1,
      highWatermark: 1,
      currentVoters: [
        { replicaId: 1, logEndOffset: 1, lastFetchTimestamp: -1 },
        { replicaId: 2, logEndOffset: 1, lastFetchTimestamp: 2000 },
        { replicaId: 3, logEndOffset: -1, lastFetchTimestamp: -1 }
      ]
    })
    expect(RaftNode.describeQuorum(voter(2, { leaderEpoch: 1, votedId: -1, leaderId: 1 }).state)).toMatchObject({
      leaderId: 1,
      currentVoters: []
    })
  })

  it("refuses appends when not the leader", () => {
    const v = voter(2)
    expect(v.on({ _tag: "Append", values: ["x"] })).toEqual([
      { _tag: "AppendRejected", errorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER, leaderId: -1 }
    ])
  })
})

describe("RaftNode follower", () => {
  it("fetches again only after the fetched records are flushed, truncates on DivergingEpoch, learns the HW", () => {
    const log = RaftLog.flushed(RaftLog.append(RaftLog.empty, records(1, 0, 5)), 5)
    const v = voter(2, { leaderEpoch: 2, votedId: -1, leaderId: 1 }, log)
    const first = sent(v.outputs)[0]
    expect(first).toMatchObject({ _tag: "FetchRequest", fetchOffset: 5, lastFetchedEpoch: 1 })
    if (first === undefined) throw new Error("no fetch")
    const truncated = v.on({
      _tag: "Response",
      from: 1,
      request: first,
      response: {
        _tag: "FetchResponse",
        errorCode: 0,
        highWatermark: 2,
        logStartOffset: 0,
        divergingEpoch: { epoch: 1, endOffset: 3 },
        currentLeader: { leaderId: 1, leaderEpoch: 2 },
        snapshotId: null,
        records: []
      }
    })
    expect(truncated).toContainEqual({ _tag: "TruncateLog", endOffset: 3 })
    const second = sent(truncated)[0]
    expect(second).toMatchObject({ fetchOffset: 3, lastFetchedEpoch: 1 })
    if (second === undefined) throw new Error("no fetch")
    const appended = v.on({
      _tag: "Response",
      from: 1,
      request: second,
      response: {
        _tag: "FetchResponse",
        errorCode: 0,
        highWatermark: 4,
        logStartOffset: 0,
        divergingEpoch: null,
        currentLeader: { leaderId: 1, leaderEpoch: 2 },
        snapshotId: null,
        records: records(2, 3, 2)
      }
    })
    expect(tags(appended)).toEqual(expect.arrayContaining(["AppendLog", "Flush", "HighWatermark"]))
    expect(v.state.highWatermark).toBe(4)
    expect(sent(appended)).toEqual([])
    const afterFlush = v.on({ _tag: "FlushCompleted", endOffset: 5 })
    expect(sent(afterFlush)).toEqual([expect.objectContaining({ fetchOffset: 5, lastFetchedEpoch: 2 })])
  })

  it("becomes prospective when the fetch times out, and a leader's BeginQuorumEpoch makes it follow", () => {
    const v = voter(2, { leaderEpoch: 1, votedId: -1, leaderId: 1 })
    v.on({ _tag: "TimerFired", timer: "fetchTimeout" }, 500)
    expect(v.state.role._tag).toBe("Prospective")
    expect(sent(v.outputs).every((m) => m._tag === "VoteRequest" && m.preVote && m.replicaEpoch === 2)).toBe(true)
    v.on({
      _tag: "Request",
      from: 3,
      request: { _tag: "BeginQuorumEpochRequest", clusterId: "clustermirror", voterId: 2, leaderId: 3, leaderEpoch: 2 }
    })
    expect(v.state.role).toMatchObject({ _tag: "Follower", leaderId: 3 })
    expect(v.state.quorum).toEqual({ leaderEpoch: 2, votedId: -1, leaderId: 3 })
  })

  it("ignores a timer whose deadline was replaced", () => {
    const v = voter(2, { leaderEpoch: 1, votedId: -1, leaderId: 1 })
    expect(v.on({ _tag: "TimerFired", timer: "fetchTimeout" }, 5)).toEqual([])
    expect(v.state.role._tag).toBe("Follower")
  })
})

describe("RaftNode restarts and resignation", () => {
  it("a voter restarting from a quorum state naming itself leader is Resigned and elects after its timeout", () => {
    const v = voter(1, { leaderEpoch: 4, votedId: 1, leaderId: 1 })
    expect(v.state.role._tag).toBe("Resigned")
    expect(v.state.highWatermark).toBe(-1)
    expect(v.on({ _tag: "Append", values: ["x"] })).toEqual([
      { _tag: "AppendRejected", errorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER, leaderId: -1 }
    ])
    v.on({ _tag: "TimerFired", timer: "election" }, 1000)
    expect(v.state.role._tag).toBe("Prospective")
    expect(sent(v.outputs)).toEqual([
      expect.objectContaining({ preVote: true, replicaEpoch: 5 }),
      expect.objectContaining({ preVote: true, replicaEpoch: 5 })
    ])
  })

  it("a resigning leader names the furthest voter first, which campaigns at once", () => {
    const v = leader()
    v.on({ _tag: "FlushCompleted", endOffset: 1 })
    v.on({ _tag: "Request", from: 3, request: fetch(3, 1, 1, 1) })
    const out = v.on({ _tag: "Resign" })
    expect(v.state.role._tag).toBe("Resigned")
    const end = sent(out).find((m) => m._tag === "EndQuorumEpochRequest")
    expect(end).toMatchObject({
      leaderId: 1,
      leaderEpoch: 1,
      preferredCandidates: [{ candidateId: 3 }, { candidateId: 2 }]
    })
    if (end === undefined) throw new Error("no EndQuorumEpoch")
    const follower = voter(3, { leaderEpoch: 1, votedId: 1, leaderId: 1 })
    follower.on({ _tag: "Request", from: 1, request: end }, 10)
    expect(follower.state.role).toMatchObject({ _tag: "Follower", leaderResigned: true })
    expect(follower.state.timers.election).toBe(10)
    follower.on({ _tag: "TimerFired", timer: "election" }, 10)
    expect(follower.state.role._tag).toBe("Prospective")
  })
})
