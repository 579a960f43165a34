/**
 * One voter of a KRaft quorum as a deterministic state machine: `step(state, input)` returns the
 * next state and the outputs for the runtime to carry out, in order. No I/O, no clock, no
 * randomness of its own: time and a random number come with every input, so a run replays exactly
 * from its inputs (KIP-595, KIP-630 snapshots, KIP-996 pre-vote; static voters).
 *
 * States: Unattached (no leader known in the epoch, maybe voted), Prospective (pre-vote in the
 * current epoch, no epoch bump), Candidate (epoch bumped, voted for itself), Leader, Follower,
 * Resigned (a leader that stepped down and waits for the next epoch).
 */
import * as RaftConfig from "./RaftConfig.js"
import { ErrorCode } from "./RaftError.js"
import type { RaftEvent, RaftInput, RaftOutput, TimerName } from "./RaftEvent.js"
import * as RaftLog from "./RaftLog.js"
import type {
  FetchRequest,
  FetchResponse,
  FetchSnapshotRequest,
  FetchSnapshotResponse,
  LogRecord,
  RaftRequest,
  RaftResponse,
  SnapshotId,
  VoteRequest
} from "./RaftMessages.js"
import * as QuorumState from "./QuorumState.js"

export interface ReplicaProgress {
  /** The last validated fetch offset of the replica: its log is durable and equal to ours below it. */
  readonly endOffset: number
  readonly lastFetchMs: number
}

export type Role =
  | { readonly _tag: "Unattached" }
  | {
      readonly _tag: "Prospective"
      readonly granted: ReadonlySet<number>
      readonly rejected: ReadonlySet<number>
      /** The leader this voter followed before its fetch timed out, or -1. */
      readonly leaderId: number
    }
  | {
      readonly _tag: "Candidate"
      readonly granted: ReadonlySet<number>
      readonly rejected: ReadonlySet<number>
      readonly backingOff: boolean
    }
  | {
      readonly _tag: "Leader"
      /** The offset of this epoch's LeaderChange record: the HW only advances past it. */
      readonly epochStartOffset: number
      readonly replicas: ReadonlyMap<number, ReplicaProgress>
      /** Voters that acknowledged the epoch (a BeginQuorumEpoch response or a fetch). */
      readonly acknowledged: ReadonlySet<number>
    }
  | {
      readonly _tag: "Follower"
      readonly leaderId: number
      /** The Fetch or FetchSnapshot awaiting its response. */
      readonly inFlight: RaftRequest | null
      /** A fetch waits for the flush of the records appended from the last one. */
      readonly awaitingFlush: boolean
      /** The leader sent EndQuorumEpoch: stop fetching, grant pre-votes, elect after the rank's wait. */
      readonly leaderResigned: boolean
      readonly fetchDeadline: number
    }
  | { readonly _tag: "Resigned" }

export interface RaftState {
  readonly config: RaftConfig.RaftConfig
  readonly quorum: QuorumState.QuorumStateData
  readonly role: Role
  readonly log: RaftLog.LogView
  /** Records below it are committed; -1 while unknown (after a start, until a leader tells). */
  readonly highWatermark: number
  /** The deadline of each armed timer; a `TimerFired` for another deadline is stale and ignored. */
  readonly timers: Readonly<Partial<Record<TimerName, number>>>
}

export interface StepResult<V> {
  readonly state: RaftState
  readonly outputs: ReadonlyArray<RaftOutput<V>>
}

interface Ctx<V> {
  s: RaftState
  readonly out: Array<RaftOutput<V>>
  readonly now: number
  seed: number
}

/** A voter starting from its persisted quorum state and the log view its runtime recovered. */
export const init = <V>(
  config: RaftConfig.RaftConfig,
  quorum: QuorumState.QuorumStateData,
  log: RaftLog.LogView,
  now: number,
  random: number
): StepResult<V> => {
  const ctx: Ctx<V> = {
    s: { config, quorum, role: { _tag: "Unattached" }, log, highWatermark: -1, timers: {} },
    out: [],
    now,
    seed: random >>> 0
  }
  const self = config.nodeId
  if (quorum.leaderId === self) becomeResigned(ctx)
  else if (quorum.leaderId >= 0) becomeFollower(ctx, quorum.leaderEpoch, quorum.leaderId, false)
  else if (config.voters.length === 1) becomeProspective(ctx)
  else becomeUnattached(ctx, quorum.leaderEpoch, quorum.votedId)
  return { state: ctx.s, outputs: ctx.out }
}

/** Applies one input. */
export const step = <V>(state: RaftState, input: RaftInput<V>): StepResult<V> => {
  const ctx: Ctx<V> = { s: state, out: [], now: input.now, seed: input.random >>> 0 }
  handle(ctx, input.event)
  return { state: ctx.s, outputs: ctx.out }
}

/** The epoch of the voter. */
export const epoch = (state: RaftState): number => state.quorum.leaderEpoch

/** The leader id the voter knows, or -1. */
export const leaderId = (state: RaftState): number =>
  state.role._tag === "Leader" ? state.config.nodeId : state.role._tag === "Follower" ? state.role.leaderId : -1

const handle = <V>(ctx: Ctx<V>, event: RaftEvent<V>): void => {
  switch (event._tag) {
    case "Request":
      return onRequest(ctx, event.from, event.request)
    case "Response":
      return onResponse(ctx, event.from, event.request, event.response)
    case "TimerFired":
      return onTimer(ctx, event.timer)
    case "Append":
      return onAppend(ctx, event.values)
    case "FlushCompleted":
      return onFlushCompleted(ctx, event.endOffset)
    case "CreateSnapshot":
      return onCreateSnapshot(ctx, event.endOffset)
    case "Resign":
      if (ctx.s.role._tag === "Leader") becomeResigned(ctx)
      return
  }
}

// ---------------------------------------------------------------------------------------------
// small pieces

/** A random number in [0, 1) (mulberry32 over the input's random). */
const rand = (ctx: Ctx<unknown>): number => {
  ctx.seed = (ctx.seed + 0x6d2b79f5) >>> 0
  let t = ctx.seed
  t = Math.imul(t ^ (t >>> 15), t | 1)
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

const self = (ctx: Ctx<unknown>): number => ctx.s.config.nodeId
const others = (ctx: Ctx<unknown>): ReadonlyArray<number> => ctx.s.config.voters.filter((v) => v !== self(ctx))
const isVoter = (ctx: Ctx<unknown>, id: number): boolean => ctx.s.config.voters.includes(id)
const majority = (ctx: Ctx<unknown>): number => RaftConfig.majority(ctx.s.config)

const setTimer = <V>(ctx: Ctx<V>, timer: TimerName, at: number): void => {
  ctx.s = { ...ctx.s, timers: { ...ctx.s.timers, [timer]: at } }
  ctx.out.push({ _tag: "SetTimer", timer, at })
}

const setRole = <V>(ctx: Ctx<V>, role: Role): void => {
  ctx.s = { ...ctx.s, role }
}

const electionDeadline = (ctx: Ctx<unknown>): number => {
  const t = ctx.s.config.electionTimeoutMs
  return ctx.now + t + Math.floor(rand(ctx) * t)
}

/** Enters `role` with `quorum`, persisting the quorum state first when it changed; timers are disarmed. */
const transition = <V>(ctx: Ctx<V>, quorum: QuorumState.QuorumStateData, role: Role): void => {
  const from = ctx.s.role._tag
  if (!QuorumState.equals(quorum, ctx.s.quorum)) ctx.out.push({ _tag: "PersistQuorumState", state: quorum })
  ctx.s = { ...ctx.s, quorum, role, timers: {} }
  ctx.out.push({ _tag: "Transition", from, to: role._tag, epoch: quorum.leaderEpoch, leaderId: leaderId(ctx.s) })
}

const setHighWatermark = <V>(ctx: Ctx<V>, offset: number): void => {
  if (offset <= ctx.s.highWatermark) return
  ctx.s = { ...ctx.s, highWatermark: offset }
  ctx.out.push({ _tag: "HighWatermark", offset })
}

const appendLocal = <V>(ctx: Ctx<V>, records: ReadonlyArray<LogRecord<V>>): void => {
  if (records.length === 0) return
  ctx.s = { ...ctx.s, log: RaftLog.append(ctx.s.log, records) }
  ctx.out.push({ _tag: "AppendLog", records })
  ctx.out.push({ _tag: "Flush", endOffset: ctx.s.log.endOffset })
}

/** The leader this voter vouches for in its answers: itself as leader, or the one it follows. */
const currentLeader = (ctx: Ctx<unknown>) => ({ leaderId: leaderId(ctx.s), leaderEpoch: ctx.s.quorum.leaderEpoch })

// ---------------------------------------------------------------------------------------------
// state entries

const becomeUnattached = <V>(ctx: Ctx<V>, epoch: number, votedId: number): void => {
  transition(ctx, { leaderEpoch: epoch, votedId: votedId, leaderId: -1 }, { _tag: "Unattached" })
  setTimer(ctx, "election", electionDeadline(ctx))
}

/**
 * Follows `leader`. `heardFrom`: the leader (or a voter vouching for it) just showed it leads, so
 * pre-votes are refused until the fetch timeout; a voter going back to a leader it lost, or starting
 * from its persisted state, does not refuse them until a fetch succeeds.
 */
const becomeFollower = <V>(ctx: Ctx<V>, epoch: number, leader: number, heardFrom = true): void => {
  const votedId = epoch === ctx.s.quorum.leaderEpoch ? ctx.s.quorum.votedId : -1
  const timeout = ctx.now + ctx.s.config.fetchTimeoutMs
  transition(
    ctx,
    { leaderEpoch: epoch, votedId: votedId, leaderId: leader },
    {
      _tag: "Follower",
      leaderId: leader,
      inFlight: null,
      awaitingFlush: false,
      leaderResigned: false,
      fetchDeadline: heardFrom ? timeout : ctx.now
    }
  )
  setTimer(ctx, "fetchTimeout", timeout)
  sendFetch(ctx)
}

const becomeProspective = <V>(ctx: Ctx<V>): void => {
  const r = ctx.s.role
  const leader = r._tag === "Follower" ? r.leaderId : r._tag === "Prospective" ? r.leaderId : -1
  transition(ctx, ctx.s.quorum, {
    _tag: "Prospective",
    granted: new Set([self(ctx)]),
    rejected: new Set(),
    leaderId: leader
  })
  setTimer(ctx, "election", electionDeadline(ctx))
  if (majority(ctx) <= 1) return becomeCandidate(ctx)
  for (const to of others(ctx)) ctx.out.push({ _tag: "Send", to, message: voteRequest(ctx, to, true) })
}

const becomeCandidate = <V>(ctx: Ctx<V>): void => {
  const epoch = ctx.s.quorum.leaderEpoch + 1
  transition(
    ctx,
    { leaderEpoch: epoch, votedId: self(ctx), leaderId: -1 },
    { _tag: "Candidate", granted: new Set([self(ctx)]), rejected: new Set(), backingOff: false }
  )
  setTimer(ctx, "election", electionDeadline(ctx))
  if (majority(ctx) <= 1) return becomeLeader(ctx)
  for (const to of others(ctx)) ctx.out.push({ _tag: "Send", to, message: voteRequest(ctx, to, false) })
}

const becomeLeader = <V>(ctx: Ctx<V>): void => {
  const granting = ctx.s.role._tag === "Candidate" ? [...ctx.s.role.granted].sort((a, b) => a - b) : [self(ctx)]
  const epochStartOffset = ctx.s.log.endOffset
  const replicas = new Map<number, ReplicaProgress>()
  for (const v of others(ctx)) replicas.set(v, { endOffset: -1, lastFetchMs: ctx.now })
  transition(
    ctx,
    { ...ctx.s.quorum, leaderId: self(ctx) },
    { _tag: "Leader", epochStartOffset, replicas, acknowledged: new Set([self(ctx)]) }
  )
  appendLocal(ctx, [
    {
      _tag: "LeaderChange",
      offset: epochStartOffset,
      epoch: ctx.s.quorum.leaderEpoch,
      value: { leaderId: self(ctx), voters: ctx.s.config.voters, grantingVoters: granting }
    }
  ])
  sendBeginQuorumEpoch(ctx)
  setTimer(ctx, "checkQuorum", ctx.now + checkQuorumMs(ctx))
}

const becomeResigned = <V>(ctx: Ctx<V>): void => {
  const r = ctx.s.role
  const progress = r._tag === "Leader" ? r.replicas : new Map<number, ReplicaProgress>()
  const preferred = others(ctx)
    .map((id) => ({ id, endOffset: progress.get(id)?.endOffset ?? -1 }))
    .sort((a, b) => b.endOffset - a.endOffset || a.id - b.id)
  transition(ctx, { ...ctx.s.quorum, leaderId: self(ctx) }, { _tag: "Resigned" })
  setTimer(ctx, "election", electionDeadline(ctx))
  for (const to of others(ctx))
    ctx.out.push({
      _tag: "Send",
      to,
      message: {
        _tag: "EndQuorumEpochRequest",
        clusterId: ctx.s.config.clusterId,
        leaderId: self(ctx),
        leaderEpoch: ctx.s.quorum.leaderEpoch,
        preferredCandidates: preferred.map((p) => ({ candidateId: p.id }))
      }
    })
}

const checkQuorumMs = (ctx: Ctx<unknown>): number => Math.floor(ctx.s.config.fetchTimeoutMs * 1.5)

const voteRequest = (ctx: Ctx<unknown>, to: number, preVote: boolean): VoteRequest => ({
  _tag: "VoteRequest",
  clusterId: ctx.s.config.clusterId,
  voterId: to,
  replicaEpoch: preVote ? ctx.s.quorum.leaderEpoch + 1 : ctx.s.quorum.leaderEpoch,
  replicaId: self(ctx),
  lastOffsetEpoch: RaftLog.lastEpoch(ctx.s.log),
  lastOffset: ctx.s.log.endOffset,
  preVote: preVote
})

const sendBeginQuorumEpoch = <V>(ctx: Ctx<V>): void => {
  const r = ctx.s.role
  if (r._tag !== "Leader") return
  // Also to voters that stopped fetching: one stuck in a higher epoch answers with it, and this
  // leader steps down instead of leaving that voter out for good.
  const stale = ctx.now - ctx.s.config.fetchTimeoutMs
  const pending = others(ctx).filter((v) => !r.acknowledged.has(v) || (r.replicas.get(v)?.lastFetchMs ?? 0) < stale)
  for (const to of pending)
    ctx.out.push({
      _tag: "Send",
      to,
      message: {
        _tag: "BeginQuorumEpochRequest",
        clusterId: ctx.s.config.clusterId,
        voterId: to,
        leaderId: self(ctx),
        leaderEpoch: ctx.s.quorum.leaderEpoch
      }
    })
  setTimer(
    ctx,
    "beginQuorum",
    ctx.now + (pending.length > 0 ? ctx.s.config.requestTimeoutMs : Math.floor(ctx.s.config.fetchTimeoutMs / 2))
  )
}

/** The follower's next Fetch: only once what it fetched before is flushed, since the offset acknowledges it. */
const sendFetch = <V>(ctx: Ctx<V>): void => {
  const r = ctx.s.role
  if (r._tag !== "Follower" || r.leaderResigned) return
  const log = ctx.s.log
  if (ctx.s.config.broken?.ackBeforeFlush !== true && log.flushedOffset < log.endOffset) {
    setRole(ctx, { ...r, awaitingFlush: true })
    return
  }
  const request: FetchRequest = {
    _tag: "FetchRequest",
    clusterId: ctx.s.config.clusterId,
    replicaId: self(ctx),
    replicaEpoch: ctx.s.quorum.leaderEpoch,
    maxWaitMs: ctx.s.config.fetchWaitMs,
    currentLeaderEpoch: ctx.s.quorum.leaderEpoch,
    fetchOffset: log.endOffset,
    lastFetchedEpoch: RaftLog.lastEpoch(log),
    logStartOffset: log.logStartOffset
  }
  setRole(ctx, { ...r, inFlight: request, awaitingFlush: false })
  ctx.out.push({ _tag: "Send", to: r.leaderId, message: request })
  setTimer(ctx, "fetchNext", ctx.now + ctx.s.config.requestTimeoutMs)
}

const sendFetchSnapshot = <V>(ctx: Ctx<V>, snapshotId: SnapshotId): void => {
  const r = ctx.s.role
  if (r._tag !== "Follower") return
  const request: FetchSnapshotRequest = {
    _tag: "FetchSnapshotRequest",
    clusterId: ctx.s.config.clusterId,
    replicaId: self(ctx),
    currentLeaderEpoch: ctx.s.quorum.leaderEpoch,
    snapshotId: snapshotId,
    position: 0
  }
  setRole(ctx, { ...r, inFlight: request, awaitingFlush: false })
  ctx.out.push({ _tag: "Send", to: r.leaderId, message: request })
  setTimer(ctx, "fetchNext", ctx.now + ctx.s.config.requestTimeoutMs)
}

/** A message shows a higher epoch, or a leader of the current one: follow it. True when the state changed. */
const observeLeader = <V>(ctx: Ctx<V>, epoch: number, leader: number): boolean => {
  const current = ctx.s.quorum.leaderEpoch
  const known = leader >= 0 && leader !== self(ctx) && isVoter(ctx, leader)
  if (epoch > current) {
    if (known) becomeFollower(ctx, epoch, leader)
    else becomeUnattached(ctx, epoch, -1)
    return true
  }
  const r = ctx.s.role
  // A prospective that lost its leader does not go back to that same leader on hearsay (that would
  // flip-flop while the leader is gone); it returns to it only when its election times out.
  const lostLeader = r._tag === "Prospective" && r.leaderId === leader
  if (
    epoch === current &&
    known &&
    !lostLeader &&
    (r._tag === "Unattached" || r._tag === "Prospective" || r._tag === "Candidate")
  ) {
    becomeFollower(ctx, epoch, leader)
    return true
  }
  return false
}

const maybeAdvanceHighWatermark = <V>(ctx: Ctx<V>): void => {
  const r = ctx.s.role
  if (r._tag !== "Leader") return
  const log = ctx.s.log
  const own = ctx.s.config.broken?.ackBeforeFlush === true ? log.endOffset : log.flushedOffset
  const offsets = ctx.s.config.voters
    .map((id) => (id === self(ctx) ? own : (r.replicas.get(id)?.endOffset ?? -1)))
    .sort((a, b) => b - a)
  const candidate = offsets[majority(ctx) - 1] ?? -1
  if (candidate > r.epochStartOffset) setHighWatermark(ctx, candidate)
}

// ---------------------------------------------------------------------------------------------
// requests

const respond = <V>(
  ctx: Ctx<V>,
  to: number,
  request: RaftRequest,
  response: Extract<RaftOutput<V>, { _tag: "Respond" }>["response"]
): void => {
  ctx.out.push({ _tag: "Respond", to, request, response })
}

const onRequest = <V>(ctx: Ctx<V>, from: number, request: RaftRequest): void => {
  if (request.clusterId !== ctx.s.config.clusterId)
    return rejectRequest(ctx, from, request, ErrorCode.INCONSISTENT_CLUSTER_ID)
  switch (request._tag) {
    case "VoteRequest":
      return onVote(ctx, from, request)
    case "BeginQuorumEpochRequest":
      return onBeginQuorumEpoch(ctx, from, request)
    case "EndQuorumEpochRequest":
      return onEndQuorumEpoch(ctx, from, request)
    case "FetchRequest":
      return onFetch(ctx, from, request)
    case "FetchSnapshotRequest":
      return onFetchSnapshot(ctx, from, request)
  }
}

/** An error answer of the request's own response type, with the leader this voter knows. */
const rejectRequest = <V>(ctx: Ctx<V>, to: number, request: RaftRequest, errorCode: number): void => {
  const leader = currentLeader(ctx)
  switch (request._tag) {
    case "VoteRequest":
      return respond(ctx, to, request, { _tag: "VoteResponse", errorCode: errorCode, ...leader, voteGranted: false })
    case "BeginQuorumEpochRequest":
      return respond(ctx, to, request, { _tag: "BeginQuorumEpochResponse", errorCode: errorCode, ...leader })
    case "EndQuorumEpochRequest":
      return respond(ctx, to, request, { _tag: "EndQuorumEpochResponse", errorCode: errorCode, ...leader })
    case "FetchRequest":
      return respondFetch(ctx, to, request, errorCode, null, null, request.fetchOffset, request.fetchOffset)
    case "FetchSnapshotRequest":
      ctx.out.push({
        _tag: "RespondFetchSnapshot",
        to,
        request,
        response: {
          _tag: "FetchSnapshotResponse",
          errorCode: errorCode,
          snapshotId: request.snapshotId,
          currentLeader: leader,
          size: 0,
          position: request.position,
          unalignedRecords: []
        }
      })
      return
  }
}

const onVote = <V>(ctx: Ctx<V>, from: number, req: VoteRequest): void => {
  if (req.voterId !== self(ctx) || !isVoter(ctx, req.replicaId) || req.replicaId !== from)
    return rejectRequest(ctx, from, req, ErrorCode.INCONSISTENT_VOTER_SET)
  // A pre-vote carries the epoch its sender would campaign in; the sender itself is one below.
  const senderEpoch = req.preVote ? req.replicaEpoch - 1 : req.replicaEpoch
  if (senderEpoch < ctx.s.quorum.leaderEpoch) return rejectRequest(ctx, from, req, ErrorCode.FENCED_LEADER_EPOCH)
  const upToDate = RaftLog.isUpToDate(ctx.s.log, req.lastOffsetEpoch, req.lastOffset)
  const r = ctx.s.role
  let granted: boolean
  if (req.preVote) {
    // Pre-votes change nothing here; they are refused while this voter has a live leader in that epoch.
    const liveLeader =
      senderEpoch === ctx.s.quorum.leaderEpoch &&
      (r._tag === "Leader" || (r._tag === "Follower" && !r.leaderResigned && ctx.now < r.fetchDeadline))
    granted = upToDate && !liveLeader
  } else if (req.replicaEpoch > ctx.s.quorum.leaderEpoch) {
    // A new epoch: unattached in it, with the vote if granted, persisted once.
    granted = upToDate
    becomeUnattached(ctx, req.replicaEpoch, granted ? req.replicaId : -1)
  } else {
    const q = ctx.s.quorum
    const votedOther = q.votedId !== -1 && q.votedId !== req.replicaId && ctx.s.config.broken?.voteTwice !== true
    granted = upToDate && q.leaderId === -1 && !votedOther && r._tag !== "Leader" && r._tag !== "Follower"
    if (granted && q.votedId !== req.replicaId) becomeUnattached(ctx, q.leaderEpoch, req.replicaId)
    else if (granted) setTimer(ctx, "election", electionDeadline(ctx))
  }
  respond(ctx, from, req, {
    _tag: "VoteResponse",
    errorCode: ErrorCode.NONE,
    ...currentLeader(ctx),
    voteGranted: granted
  })
}

const onBeginQuorumEpoch = <V>(
  ctx: Ctx<V>,
  from: number,
  req: Extract<RaftRequest, { _tag: "BeginQuorumEpochRequest" }>
): void => {
  if (req.voterId !== self(ctx) || !isVoter(ctx, req.leaderId) || req.leaderId !== from)
    return rejectRequest(ctx, from, req, ErrorCode.INCONSISTENT_VOTER_SET)
  if (req.leaderEpoch < ctx.s.quorum.leaderEpoch) return rejectRequest(ctx, from, req, ErrorCode.FENCED_LEADER_EPOCH)
  const r = ctx.s.role
  const following = r._tag === "Follower" && r.leaderId === req.leaderId
  if (req.leaderEpoch > ctx.s.quorum.leaderEpoch || (!following && r._tag !== "Leader" && r._tag !== "Resigned"))
    becomeFollower(ctx, req.leaderEpoch, req.leaderId)
  else if (r._tag === "Follower" && following && !r.leaderResigned) {
    // The leader it follows is alive: refuse pre-votes again until the fetch timeout.
    const fetchDeadline = ctx.now + ctx.s.config.fetchTimeoutMs
    setRole(ctx, { ...r, fetchDeadline })
    setTimer(ctx, "fetchTimeout", fetchDeadline)
  }
  respond(ctx, from, req, { _tag: "BeginQuorumEpochResponse", errorCode: ErrorCode.NONE, ...currentLeader(ctx) })
}

const onEndQuorumEpoch = <V>(
  ctx: Ctx<V>,
  from: number,
  req: Extract<RaftRequest, { _tag: "EndQuorumEpochRequest" }>
): void => {
  if (!isVoter(ctx, req.leaderId) || req.leaderId !== from)
    return rejectRequest(ctx, from, req, ErrorCode.INCONSISTENT_VOTER_SET)
  if (req.leaderEpoch < ctx.s.quorum.leaderEpoch) return rejectRequest(ctx, from, req, ErrorCode.FENCED_LEADER_EPOCH)
  if (req.leaderEpoch > ctx.s.quorum.leaderEpoch) becomeFollower(ctx, req.leaderEpoch, req.leaderId)
  const r = ctx.s.role
  if (r._tag === "Follower" && r.leaderId === req.leaderId && !r.leaderResigned) {
    // The first preferred successor campaigns at once, the others after a wait growing with their rank.
    const rank = req.preferredCandidates.findIndex((c) => c.candidateId === self(ctx))
    const position = rank < 0 ? req.preferredCandidates.length : rank
    const wait =
      position === 0
        ? 0
        : Math.floor(((position + rand(ctx)) * ctx.s.config.electionBackoffMaxMs) / ctx.s.config.voters.length)
    setRole(ctx, { ...r, leaderResigned: true, inFlight: null, awaitingFlush: false })
    setTimer(ctx, "election", ctx.now + wait)
  }
  respond(ctx, from, req, { _tag: "EndQuorumEpochResponse", errorCode: ErrorCode.NONE, ...currentLeader(ctx) })
}

const respondFetch = <V>(
  ctx: Ctx<V>,
  to: number,
  request: FetchRequest,
  errorCode: number,
  divergingEpoch: SnapshotId | null,
  snapshotId: SnapshotId | null,
  readFrom: number,
  readTo: number
): void => {
  const response: FetchResponse<V> = {
    _tag: "FetchResponse",
    errorCode: errorCode,
    highWatermark: ctx.s.role._tag === "Leader" ? ctx.s.highWatermark : -1,
    logStartOffset: ctx.s.log.logStartOffset,
    divergingEpoch: divergingEpoch,
    currentLeader: currentLeader(ctx),
    snapshotId: snapshotId,
    records: []
  }
  ctx.out.push({ _tag: "RespondFetch", to, request, response, readFrom, readTo })
}

/** Whether a fetch is at a position consistent with this log, or where the fetcher must go instead. */
const validateFetch = (
  log: RaftLog.LogView,
  fetchOffset: number,
  lastFetchedEpoch: number
):
  | { readonly _tag: "Valid" }
  | { readonly _tag: "Diverging"; readonly at: SnapshotId }
  | { readonly _tag: "Snapshot" } => {
  if (fetchOffset < log.logStartOffset) return { _tag: "Snapshot" }
  if (fetchOffset === 0) return { _tag: "Valid" }
  const end = RaftLog.endOffsetForEpoch(log, lastFetchedEpoch)
  if (end.endOffset < log.logStartOffset)
    return log.snapshotId !== null ? { _tag: "Snapshot" } : { _tag: "Diverging", at: { epoch: -1, endOffset: 0 } }
  if (end.epoch !== lastFetchedEpoch || end.endOffset < fetchOffset) return { _tag: "Diverging", at: end }
  return { _tag: "Valid" }
}

const onFetch = <V>(ctx: Ctx<V>, from: number, req: FetchRequest): void => {
  const r = ctx.s.role
  if (r._tag !== "Leader") return rejectRequest(ctx, from, req, ErrorCode.NOT_LEADER_OR_FOLLOWER)
  if (req.currentLeaderEpoch < ctx.s.quorum.leaderEpoch)
    return rejectRequest(ctx, from, req, ErrorCode.FENCED_LEADER_EPOCH)
  if (req.currentLeaderEpoch > ctx.s.quorum.leaderEpoch)
    return rejectRequest(ctx, from, req, ErrorCode.UNKNOWN_LEADER_EPOCH)
  const voter = isVoter(ctx, from) && from !== self(ctx) && req.replicaId === from
  const validation = validateFetch(ctx.s.log, req.fetchOffset, req.lastFetchedEpoch)
  if (voter) {
    const before = r.replicas.get(from)
    const replicas = new Map(r.replicas)
    replicas.set(from, {
      endOffset: validation._tag === "Valid" ? req.fetchOffset : (before?.endOffset ?? -1),
      lastFetchMs: ctx.now
    })
    const acknowledged = r.acknowledged.has(from) ? r.acknowledged : new Set([...r.acknowledged, from])
    setRole(ctx, { ...r, replicas, acknowledged })
    if (validation._tag === "Valid") maybeAdvanceHighWatermark(ctx)
  }
  switch (validation._tag) {
    case "Snapshot":
      return respondFetch(ctx, from, req, ErrorCode.NONE, null, ctx.s.log.snapshotId, req.fetchOffset, req.fetchOffset)
    case "Diverging":
      return respondFetch(ctx, from, req, ErrorCode.NONE, validation.at, null, req.fetchOffset, req.fetchOffset)
    case "Valid": {
      const readTo = Math.min(ctx.s.log.endOffset, req.fetchOffset + ctx.s.config.fetchMaxRecords)
      return respondFetch(
        ctx,
        from,
        req,
        ErrorCode.NONE,
        null,
        null,
        req.fetchOffset,
        Math.max(readTo, req.fetchOffset)
      )
    }
  }
}

const onFetchSnapshot = <V>(ctx: Ctx<V>, from: number, req: FetchSnapshotRequest): void => {
  const r = ctx.s.role
  if (r._tag !== "Leader") return rejectRequest(ctx, from, req, ErrorCode.NOT_LEADER_OR_FOLLOWER)
  if (req.currentLeaderEpoch < ctx.s.quorum.leaderEpoch)
    return rejectRequest(ctx, from, req, ErrorCode.FENCED_LEADER_EPOCH)
  if (req.currentLeaderEpoch > ctx.s.quorum.leaderEpoch)
    return rejectRequest(ctx, from, req, ErrorCode.UNKNOWN_LEADER_EPOCH)
  const snapshot = ctx.s.log.snapshotId
  if (snapshot === null || snapshot.endOffset !== req.snapshotId.endOffset || snapshot.epoch !== req.snapshotId.epoch)
    return rejectRequest(ctx, from, req, ErrorCode.SNAPSHOT_NOT_FOUND)
  if (req.position !== 0) return rejectRequest(ctx, from, req, ErrorCode.POSITION_OUT_OF_RANGE)
  const before = r.replicas.get(from)
  if (before !== undefined) {
    const replicas = new Map(r.replicas)
    replicas.set(from, { ...before, lastFetchMs: ctx.now })
    setRole(ctx, { ...r, replicas })
  }
  ctx.out.push({
    _tag: "RespondFetchSnapshot",
    to: from,
    request: req,
    response: {
      _tag: "FetchSnapshotResponse",
      errorCode: ErrorCode.NONE,
      snapshotId: snapshot,
      currentLeader: currentLeader(ctx),
      size: 0,
      position: 0,
      unalignedRecords: []
    }
  })
}

// ---------------------------------------------------------------------------------------------
// responses

const responseLeader = <V>(response: RaftResponse<V>): { readonly leaderId: number; readonly leaderEpoch: number } =>
  response._tag === "FetchResponse" || response._tag === "FetchSnapshotResponse" ? response.currentLeader : response

const onResponse = <V>(ctx: Ctx<V>, from: number, request: RaftRequest, response: RaftResponse<V>): void => {
  const leader = responseLeader(response)
  if (observeLeader(ctx, leader.leaderEpoch, leader.leaderId)) return
  if (request._tag === "VoteRequest" && response._tag === "VoteResponse")
    return onVoteResponse(ctx, from, request, response)
  if (request._tag === "BeginQuorumEpochRequest" && response._tag === "BeginQuorumEpochResponse") {
    const r = ctx.s.role
    if (
      r._tag === "Leader" &&
      request.leaderEpoch === ctx.s.quorum.leaderEpoch &&
      response.errorCode === ErrorCode.NONE
    )
      setRole(ctx, { ...r, acknowledged: new Set([...r.acknowledged, from]) })
    return
  }
  if (request._tag === "FetchRequest" && response._tag === "FetchResponse")
    return onFetchResponse(ctx, from, request, response)
  if (request._tag === "FetchSnapshotRequest" && response._tag === "FetchSnapshotResponse")
    return onFetchSnapshotResponse(ctx, from, request, response)
}

const onVoteResponse = <V>(
  ctx: Ctx<V>,
  from: number,
  request: VoteRequest,
  response: Extract<RaftResponse<V>, { _tag: "VoteResponse" }>
): void => {
  const r = ctx.s.role
  const epoch = ctx.s.quorum.leaderEpoch
  if (request.preVote) {
    if (r._tag !== "Prospective" || request.replicaEpoch !== epoch + 1) return
    if (response.voteGranted && response.errorCode === ErrorCode.NONE) {
      const granted = new Set([...r.granted, from])
      setRole(ctx, { ...r, granted })
      if (granted.size >= majority(ctx)) becomeCandidate(ctx)
    } else {
      setRole(ctx, { ...r, rejected: new Set([...r.rejected, from]) })
    }
    return
  }
  if (r._tag !== "Candidate" || request.replicaEpoch !== epoch || response.leaderEpoch !== epoch) return
  if (response.voteGranted && response.errorCode === ErrorCode.NONE) {
    const granted = new Set([...r.granted, from])
    setRole(ctx, { ...r, granted })
    if (granted.size >= majority(ctx)) becomeLeader(ctx)
  } else {
    const rejected = new Set([...r.rejected, from])
    const cannotWin = ctx.s.config.voters.length - rejected.size < majority(ctx)
    if (cannotWin && !r.backingOff) {
      setRole(ctx, { ...r, rejected, backingOff: true })
      setTimer(ctx, "election", ctx.now + Math.floor(rand(ctx) * ctx.s.config.electionBackoffMaxMs))
    } else setRole(ctx, { ...r, rejected })
  }
}

const onFetchResponse = <V>(ctx: Ctx<V>, from: number, request: FetchRequest, response: FetchResponse<V>): void => {
  const r = ctx.s.role
  if (r._tag !== "Follower" || r.inFlight !== request || from !== r.leaderId) return
  setRole(ctx, { ...r, inFlight: null })
  if (response.errorCode !== ErrorCode.NONE) {
    // The leader of this epoch says it no longer leads (it resigned or restarted): elect now.
    if (response.errorCode === ErrorCode.NOT_LEADER_OR_FOLLOWER && response.currentLeader.leaderId === -1)
      return becomeProspective(ctx)
    setTimer(ctx, "fetchNext", ctx.now + ctx.s.config.fetchWaitMs)
    return
  }
  const fetchDeadline = ctx.now + ctx.s.config.fetchTimeoutMs
  setRole(ctx, { ...r, inFlight: null, fetchDeadline })
  setTimer(ctx, "fetchTimeout", fetchDeadline)
  if (response.divergingEpoch !== null) {
    const d = response.divergingEpoch
    const local = RaftLog.endOffsetForEpoch(ctx.s.log, d.epoch)
    const to = Math.max(
      ctx.s.log.logStartOffset,
      local.endOffset < 0 ? Math.min(d.endOffset, ctx.s.log.logStartOffset) : Math.min(d.endOffset, local.endOffset)
    )
    if (to < ctx.s.log.endOffset) {
      ctx.s = { ...ctx.s, log: RaftLog.truncateTo(ctx.s.log, to) }
      ctx.out.push({ _tag: "TruncateLog", endOffset: to })
    }
    return sendFetch(ctx)
  }
  if (response.snapshotId !== null) return sendFetchSnapshot(ctx, response.snapshotId)
  const records = response.records
  const first = records[0]
  const appended = first !== undefined && first.offset === ctx.s.log.endOffset
  if (appended) appendLocal(ctx, records)
  if (response.highWatermark >= 0) setHighWatermark(ctx, Math.min(response.highWatermark, ctx.s.log.endOffset))
  if (appended) sendFetch(ctx)
  else setTimer(ctx, "fetchNext", ctx.now + ctx.s.config.fetchWaitMs)
}

const onFetchSnapshotResponse = <V>(
  ctx: Ctx<V>,
  from: number,
  request: FetchSnapshotRequest,
  response: FetchSnapshotResponse<V>
): void => {
  const r = ctx.s.role
  if (r._tag !== "Follower" || r.inFlight !== request || from !== r.leaderId) return
  setRole(ctx, { ...r, inFlight: null })
  const complete = response.position === 0 && response.unalignedRecords.length === response.size
  if (response.errorCode !== ErrorCode.NONE || !complete) {
    setTimer(ctx, "fetchNext", ctx.now + ctx.s.config.fetchWaitMs)
    return
  }
  const fetchDeadline = ctx.now + ctx.s.config.fetchTimeoutMs
  setRole(ctx, { ...r, inFlight: null, fetchDeadline })
  setTimer(ctx, "fetchTimeout", fetchDeadline)
  const id = response.snapshotId
  if (id.endOffset > ctx.s.log.logStartOffset) {
    ctx.out.push({ _tag: "InstallSnapshot", snapshotId: id, records: response.unalignedRecords })
    ctx.s = { ...ctx.s, log: RaftLog.snapshotInstalled(id) }
    setHighWatermark(ctx, id.endOffset)
  }
  sendFetch(ctx)
}

// ---------------------------------------------------------------------------------------------
// timers and local events

const onTimer = <V>(ctx: Ctx<V>, timer: TimerName): void => {
  const at = ctx.s.timers[timer]
  if (at === undefined || at > ctx.now) return
  const { [timer]: _fired, ...rest } = ctx.s.timers
  ctx.s = { ...ctx.s, timers: rest }
  const r = ctx.s.role
  switch (timer) {
    case "election":
      if (r._tag === "Leader") return
      if (r._tag === "Follower" && !r.leaderResigned) return
      // A prospective that could not win goes back to the leader it lost, if it had one in this epoch.
      if (r._tag === "Prospective" && r.leaderId >= 0 && r.leaderId === ctx.s.quorum.leaderId)
        return becomeFollower(ctx, ctx.s.quorum.leaderEpoch, r.leaderId, false)
      return becomeProspective(ctx)
    case "fetchTimeout":
      if (r._tag === "Follower") becomeProspective(ctx)
      return
    case "fetchNext":
      if (r._tag === "Follower") sendFetch(ctx)
      return
    case "beginQuorum":
      return sendBeginQuorumEpoch(ctx)
    case "checkQuorum": {
      if (r._tag !== "Leader") return
      const since = ctx.now - checkQuorumMs(ctx)
      let live = 1
      for (const p of r.replicas.values()) if (p.lastFetchMs >= since) live++
      if (live < majority(ctx)) return becomeResigned(ctx)
      setTimer(ctx, "checkQuorum", ctx.now + Math.floor(ctx.s.config.fetchTimeoutMs / 2))
      return
    }
  }
}

const onAppend = <V>(ctx: Ctx<V>, values: ReadonlyArray<V>): void => {
  if (ctx.s.role._tag !== "Leader") {
    ctx.out.push({ _tag: "AppendRejected", errorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER, leaderId: leaderId(ctx.s) })
    return
  }
  const base = ctx.s.log.endOffset
  const epoch = ctx.s.quorum.leaderEpoch
  appendLocal(
    ctx,
    values.map((value, i): LogRecord<V> => ({ _tag: "Data", offset: base + i, epoch, value }))
  )
  ctx.out.push({ _tag: "Appended", baseOffset: base, lastOffset: base + values.length - 1, epoch })
}

const onFlushCompleted = <V>(ctx: Ctx<V>, endOffset: number): void => {
  ctx.s = { ...ctx.s, log: RaftLog.flushed(ctx.s.log, endOffset) }
  const r = ctx.s.role
  if (r._tag === "Leader") maybeAdvanceHighWatermark(ctx)
  else if (r._tag === "Follower" && r.awaitingFlush && ctx.s.log.flushedOffset >= ctx.s.log.endOffset) sendFetch(ctx)
}

const onCreateSnapshot = <V>(ctx: Ctx<V>, endOffset: number): void => {
  const log = ctx.s.log
  if (endOffset <= log.logStartOffset || endOffset > ctx.s.highWatermark || endOffset > log.flushedOffset) return
  const snapshotId: SnapshotId = { endOffset: endOffset, epoch: RaftLog.epochAt(log, endOffset - 1) }
  ctx.out.push({ _tag: "CreateSnapshot", snapshotId })
  ctx.s = { ...ctx.s, log: RaftLog.snapshotTaken(log, snapshotId) }
}

/** A replica's line in DescribeQuorum (`CurrentVoters`). */
export interface ReplicaDescription {
  readonly replicaId: number
  /** -1 when unknown (a voter that has not fetched in this epoch). */
  readonly logEndOffset: number
  /** -1 when unknown. */
  readonly lastFetchTimestamp: number
}

/** What DescribeQuorum answers from this voter: the leader's view of the voters, or only the epoch elsewhere. */
export interface QuorumDescription {
  readonly leaderId: number
  readonly leaderEpoch: number
  readonly highWatermark: number
  /** Empty unless this voter is the leader. */
  readonly currentVoters: ReadonlyArray<ReplicaDescription>
}

export const describeQuorum = (state: RaftState): QuorumDescription => {
  const r = state.role
  const voters: Array<ReplicaDescription> = []
  if (r._tag === "Leader")
    for (const id of state.config.voters) {
      const p = r.replicas.get(id)
      voters.push(
        id === state.config.nodeId
          ? { replicaId: id, logEndOffset: state.log.endOffset, lastFetchTimestamp: -1 }
          : {
              replicaId: id,
              logEndOffset: p?.endOffset ?? -1,
              lastFetchTimestamp: p !== undefined && p.endOffset >= 0 ? p.lastFetchMs : -1
            }
      )
    }
  return {
    leaderId: leaderId(state),
    leaderEpoch: state.quorum.leaderEpoch,
    highWatermark: state.highWatermark,
    currentVoters: voters
  }
}
