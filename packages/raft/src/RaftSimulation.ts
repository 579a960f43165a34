/**
 * A deterministic simulation of a quorum of voters, in the style of Kafka's RaftEventSimulationTest:
 * N voters (the real `RaftNode` core) over an in-memory network and a simulated clock. One seed
 * decides everything: message drops, delays (so reordering), duplication, partitions of a minority or
 * a majority (healed later), crash-restarts losing the unflushed log suffix (the persisted quorum
 * state and the flushed log survive), graceful resignations, snapshots, and a clock skew per voter.
 * Invariants are checked after every step; a run stops at the first violation, with a trace.
 *
 * Pure computation: no I/O, no wall clock, no `Math.random`. The same seed gives the same run.
 */
import type { BrokenVariant } from "./RaftConfig.js"
import * as RaftConfig from "./RaftConfig.js"
import type { RaftEvent, RaftOutput, TimerName } from "./RaftEvent.js"
import * as RaftLog from "./RaftLog.js"
import type { LogRecord, RaftRequest, RaftResponse, SnapshotId } from "./RaftMessages.js"
import * as RaftNode from "./RaftNode.js"
import * as QuorumState from "./QuorumState.js"

// ---------------------------------------------------------------------------------------------
// a small seeded PRNG (sfc32)

export interface Prng {
  /** A uniform 32-bit unsigned integer. */
  readonly next: () => number
  /** A uniform float in [0, 1). */
  readonly float: () => number
  /** A uniform integer in [lo, hi]. */
  readonly int: (lo: number, hi: number) => number
  /** True with probability p. */
  readonly chance: (p: number) => boolean
}

export const prng = (seed: number): Prng => {
  let a = 0x9e3779b9
  let b = 0x243f6a88
  let c = 0xb7e15162
  let d = seed >>> 0
  const next = (): number => {
    a >>>= 0
    b >>>= 0
    c >>>= 0
    d >>>= 0
    const t = (((a + b) | 0) + d) | 0
    d = (d + 1) | 0
    a = b ^ (b >>> 9)
    b = (c + (c << 3)) | 0
    c = (c << 21) | (c >>> 11)
    c = (c + t) | 0
    return t >>> 0
  }
  for (let i = 0; i < 12; i++) next()
  const float = () => next() / 4294967296
  return {
    next,
    float,
    int: (lo, hi) => lo + Math.floor(float() * (hi - lo + 1)),
    chance: (p) => float() < p
  }
}

// ---------------------------------------------------------------------------------------------
// options and results

export interface SimulationOptions {
  readonly seed: number
  /** 3 or 5 voters; by default the seed chooses. */
  readonly voters?: number
  /** Faults happen in [0, faultMs) of simulated time; then the network heals and every voter runs. */
  readonly faultMs?: number
  /** After the faults stop, a leader followed by every voter and a committed new record within this. */
  readonly livenessBoundMs?: number
  readonly broken?: BrokenVariant
  /** Keep a readable line per step. */
  readonly trace?: boolean
}

export interface SimulationStats {
  readonly steps: number
  readonly messages: number
  /** Candidacies (epoch bumps by an election). */
  readonly elections: number
  /** Leaders elected. */
  readonly leaders: number
  readonly crashes: number
  readonly partitions: number
  readonly snapshotsInstalled: number
  readonly divergingTruncations: number
  /** Committed offsets at the end (the high watermark every voter reached). */
  readonly committed: number
  /** Simulated ms from the end of the faults to a leader every voter follows. */
  readonly recoveryMs: number
  /** The longest time without a leader that committed its epoch, while a majority was up and connected. */
  readonly maxLeaderlessMs: number
  /** Simulated ms at the end of the run. */
  readonly simulatedMs: number
}

export interface SimulationResult {
  readonly seed: number
  readonly voters: number
  readonly ok: boolean
  readonly violation: string | null
  readonly stats: SimulationStats
  /** One line per step, when `trace` was asked for (else empty). */
  readonly trace: ReadonlyArray<string>
}

/** The core's configuration in the simulation: Kafka's defaults scaled down by 10. */
export const simulationConfig = (nodeId: number, voters: ReadonlyArray<number>, broken?: BrokenVariant) =>
  RaftConfig.make(nodeId, voters, {
    electionTimeoutMs: 100,
    fetchTimeoutMs: 200,
    electionBackoffMaxMs: 100,
    requestTimeoutMs: 50,
    fetchWaitMs: 20,
    fetchMaxRecords: 20,
    ...(broken !== undefined ? { broken } : {})
  })

// ---------------------------------------------------------------------------------------------
// the world

type Value = string
type Record = LogRecord<Value>

interface PendingFlush {
  cap: number
}

interface SimNode {
  readonly id: number
  alive: boolean
  incarnation: number
  core: RaftNode.RaftState
  /** The log from `logStart`, in memory (durable below `durableEnd`). */
  log: Array<Record>
  logStart: number
  durableEnd: number
  snapshot: { readonly id: SnapshotId; readonly records: ReadonlyArray<Record> } | null
  quorum: QuorumState.QuorumStateData
  readonly clockOffset: number
  readonly clockRate: number
  pending: Array<PendingFlush>
  /** The highest HW this incarnation reported (-1 after a start). */
  hwSeen: number
}

type Message =
  | { readonly _tag: "Request"; readonly request: RaftRequest; readonly incarnation: number }
  | {
      readonly _tag: "Response"
      readonly request: RaftRequest
      readonly response: RaftResponse<Value>
      readonly incarnation: number
    }

type SimEvent =
  | { readonly _tag: "Deliver"; readonly from: number; readonly to: number; readonly message: Message }
  | { readonly _tag: "Timer"; readonly node: number; readonly incarnation: number; readonly timer: TimerName }
  | { readonly _tag: "FlushDone"; readonly node: number; readonly incarnation: number; readonly flush: PendingFlush }
  | { readonly _tag: "Crash"; readonly node: number; readonly restartAfter: number }
  | { readonly _tag: "CrashLeader"; readonly restartAfter: number }
  | { readonly _tag: "Restart"; readonly node: number }
  | { readonly _tag: "Partition"; readonly isolated: ReadonlyArray<number>; readonly healAfter: number }
  | { readonly _tag: "HealPartition"; readonly id: number }
  | { readonly _tag: "Resign"; readonly shutdown: boolean }
  | { readonly _tag: "Snapshot"; readonly node: number }
  | { readonly _tag: "PowerLoss"; readonly count: number; readonly restartAfter: number }
  | {
      readonly _tag: "Weather"
      readonly drop: number
      readonly duplicate: number
      readonly maxDelay: number
      readonly maxFlushMs: number
      /** The longest pause between two appends of the state machine (long pauses let the logs converge). */
      readonly maxAppendGapMs: number
    }
  | { readonly _tag: "ClientAppend" }
  | { readonly _tag: "FaultsEnd" }

interface Queued {
  readonly at: number
  readonly seq: number
  readonly event: SimEvent
}

/** A binary min-heap on (at, seq). */
class Queue {
  private readonly items: Array<Queued> = []
  private seq = 0
  get size(): number {
    return this.items.length
  }
  push(at: number, event: SimEvent): void {
    const item = { at, seq: this.seq++, event }
    const h = this.items
    h.push(item)
    let i = h.length - 1
    while (i > 0) {
      const p = (i - 1) >> 1
      const parent = h[p]
      if (parent === undefined || !less(item, parent)) break
      h[i] = parent
      i = p
    }
    h[i] = item
  }
  pop(): Queued | undefined {
    const h = this.items
    const top = h[0]
    const last = h.pop()
    if (top === undefined || last === undefined || h.length === 0) return top
    let i = 0
    for (;;) {
      const l = 2 * i + 1
      const r = l + 1
      let m = i
      let mItem = last
      const li = h[l]
      const ri = h[r]
      if (li !== undefined && less(li, mItem)) {
        m = l
        mItem = li
      }
      if (ri !== undefined && less(ri, mItem)) m = r
      if (m === i) break
      const child = h[m]
      if (child === undefined) break
      h[i] = child
      i = m
    }
    h[i] = last
    return top
  }
}

const less = (a: Queued, b: Queued): boolean => a.at < b.at || (a.at === b.at && a.seq < b.seq)

class Violation extends Error {}

const recordKey = (r: Record): string =>
  r._tag === "Data" ? `${r.epoch}:${r.value}` : `${r.epoch}:LeaderChange(${r.value.leaderId})`

// ---------------------------------------------------------------------------------------------
// the run

/** Runs one seed. Never throws for a violation: it is in the result. */
export const run = (options: SimulationOptions): SimulationResult => {
  const seed = options.seed >>> 0
  const rng = prng(seed)
  const n = options.voters ?? (rng.chance(0.5) ? 3 : 5)
  const faultMs = options.faultMs ?? 1500
  const livenessBoundMs = options.livenessBoundMs ?? 3000
  const ids = Array.from({ length: n }, (_, i) => i + 1)
  const tracing = options.trace === true
  const trace: Array<string> = []
  const queue = new Queue()
  let now = 0
  let drop = 0
  let duplicate = 0
  let maxDelay = 10
  let maxFlushMs = 10
  let maxAppendGapMs = 40
  const group = new Map<number, number>(ids.map((id) => [id, 0]))
  const partitions = new Map<number, ReadonlyArray<number>>()
  let partitionSeq = 0
  let faultsOver = false
  const committed: Array<string> = []
  const leaders = new Map<number, number>()
  let valueSeq = 0
  let probe: { readonly value: string; offset: number; readonly node: number; readonly epoch: number } | null = null
  let probes = 0
  let stableAt = -1
  let leaderlessSince = 0
  let maxLeaderlessMs = 0
  const stats = {
    steps: 0,
    messages: 0,
    elections: 0,
    leaders: 0,
    crashes: 0,
    partitions: 0,
    snapshotsInstalled: 0,
    divergingTruncations: 0
  }

  const log = (line: string) => {
    if (tracing) trace.push(`${String(now).padStart(6)} ${line}`)
  }
  const fail = (what: string): never => {
    log(`VIOLATION ${what}`)
    throw new Violation(what)
  }

  const localTime = (node: SimNode, t: number) => Math.floor(node.clockOffset + t * node.clockRate)
  const globalTime = (node: SimNode, at: number) => {
    let g = Math.max(now, Math.ceil((at - node.clockOffset) / node.clockRate))
    while (localTime(node, g) < at) g++
    return g
  }

  const nodes: Array<SimNode> = ids.map((id) => {
    const config = simulationConfig(id, ids, options.broken)
    return {
      id,
      alive: true,
      incarnation: 0,
      core: {
        config,
        quorum: QuorumState.initial,
        role: { _tag: "Unattached" },
        log: RaftLog.empty,
        highWatermark: -1,
        timers: {}
      },
      log: [],
      logStart: 0,
      durableEnd: 0,
      snapshot: null,
      quorum: QuorumState.initial,
      clockOffset: rng.int(0, 1_000_000),
      clockRate: 0.9 + rng.float() * 0.2,
      pending: [],
      hwSeen: -1
    }
  })
  const node = (id: number): SimNode => {
    const found = nodes[id - 1]
    if (found === undefined) throw new Error(`no node ${id}`)
    return found
  }

  const recordAt = (nd: SimNode, offset: number): Record | undefined => {
    if (offset < nd.logStart) return nd.snapshot?.records[offset]
    return nd.log[offset - nd.logStart]
  }
  const endOffset = (nd: SimNode) => nd.logStart + nd.log.length

  /** The log view a restarted voter recovers from its durable state. */
  const recoveredView = (nd: SimNode): RaftLog.LogView => {
    let view: RaftLog.LogView = nd.snapshot !== null ? RaftLog.snapshotInstalled(nd.snapshot.id) : RaftLog.empty
    view = RaftLog.append(view, nd.log)
    return RaftLog.flushed(view, endOffset(nd))
  }

  // Responses find their requester's incarnation through the request they answer.
  const sentAtIncarnation = new WeakMap<RaftRequest, number>()
  const send = (from: number, to: number, message: Message) => {
    stats.messages++
    if (message._tag === "Request") sentAtIncarnation.set(message.request, message.incarnation)
    if (group.get(from) !== group.get(to)) return
    if (rng.chance(drop)) return
    queue.push(now + rng.int(1, maxDelay), { _tag: "Deliver", from, to, message })
    if (rng.chance(duplicate)) queue.push(now + rng.int(1, maxDelay), { _tag: "Deliver", from, to, message })
  }

  const describe = (e: RaftEvent<Value>): string => {
    switch (e._tag) {
      case "Request":
        return `<- ${e.from} ${requestLine(e.request)}`
      case "Response":
        return `<- ${e.from} ${responseLine(e.response)} (for ${requestLine(e.request)})`
      case "TimerFired":
        return `timer ${e.timer}`
      case "Append":
        return `append ${e.values.join(",")}`
      case "FlushCompleted":
        return `flushed ${e.endOffset}`
      case "CreateSnapshot":
        return `snapshot at ${e.endOffset}`
      case "Resign":
        return "resign"
    }
  }

  /** Feeds one event to a voter, carries out its outputs and checks the invariants. */
  const deliver = (nd: SimNode, event: RaftEvent<Value>) => {
    stats.steps++
    const before = nd.core
    const result = RaftNode.step<Value>(before, { now: localTime(nd, now), random: rng.next(), event })
    nd.core = result.state
    if (tracing) log(`n${nd.id} ${describe(event)} => ${summarize(result.outputs)} [${stateLine(nd.core)}]`)
    apply(nd, result.outputs)
    checkHighWatermark(nd)
  }

  const apply = (nd: SimNode, outputs: ReadonlyArray<RaftOutput<Value>>) => {
    for (const o of outputs) {
      switch (o._tag) {
        case "PersistQuorumState":
          if (o.state.leaderEpoch < nd.quorum.leaderEpoch)
            fail(`n${nd.id} persisted epoch ${o.state.leaderEpoch} after ${nd.quorum.leaderEpoch}`)
          nd.quorum = o.state
          break
        case "Send":
          send(nd.id, o.to, { _tag: "Request", request: o.message, incarnation: nd.incarnation })
          break
        case "Respond":
          send(nd.id, o.to, { _tag: "Response", request: o.request, response: o.response, incarnation: -1 })
          break
        case "RespondFetch": {
          const records: Array<Record> = []
          for (let off = o.readFrom; off < o.readTo; off++) {
            const r = recordAt(nd, off)
            if (r === undefined) fail(`n${nd.id} asked to read missing offset ${off}`)
            else records.push(r)
          }
          send(nd.id, o.to, {
            _tag: "Response",
            request: o.request,
            response: { ...o.response, records: records },
            incarnation: -1
          })
          break
        }
        case "RespondFetchSnapshot": {
          const snap = nd.snapshot
          const response =
            snap !== null && o.response.errorCode === 0
              ? { ...o.response, unalignedRecords: snap.records, size: snap.records.length }
              : o.response
          send(nd.id, o.to, { _tag: "Response", request: o.request, response, incarnation: -1 })
          break
        }
        case "AppendLog":
          for (const r of o.records) {
            if (r.offset !== endOffset(nd)) fail(`n${nd.id} append at ${r.offset}, log ends at ${endOffset(nd)}`)
            nd.log.push(r)
          }
          break
        case "TruncateLog":
          if (o.endOffset < nd.hwSeen)
            fail(`n${nd.id} truncated to ${o.endOffset} below its high watermark ${nd.hwSeen}`)
          stats.divergingTruncations++
          nd.log.length = Math.max(0, o.endOffset - nd.logStart)
          nd.durableEnd = Math.min(nd.durableEnd, o.endOffset)
          for (const p of nd.pending) p.cap = Math.min(p.cap, o.endOffset)
          checkDurableMajority(`the truncation of n${nd.id} to ${o.endOffset}`)
          break
        case "Flush": {
          const flush = { cap: o.endOffset }
          nd.pending.push(flush)
          queue.push(now + rng.int(1, maxFlushMs), {
            _tag: "FlushDone",
            node: nd.id,
            incarnation: nd.incarnation,
            flush
          })
          break
        }
        case "CreateSnapshot": {
          const end = o.snapshotId.endOffset
          if (end > nd.durableEnd) fail(`n${nd.id} snapshot at ${end} beyond its durable log ${nd.durableEnd}`)
          const records: Array<Record> = []
          for (let off = 0; off < end; off++) {
            const r = recordAt(nd, off)
            if (r === undefined) fail(`n${nd.id} snapshot misses offset ${off}`)
            else records.push(r)
          }
          nd.log = nd.log.slice(end - nd.logStart)
          nd.logStart = end
          nd.snapshot = { id: o.snapshotId, records }
          break
        }
        case "InstallSnapshot": {
          const end = o.snapshotId.endOffset
          if (o.records.length !== end) fail(`n${nd.id} snapshot of ${o.records.length} records ends at ${end}`)
          o.records.forEach((r, off) => {
            const c = committed[off]
            if (c !== undefined && c !== recordKey(r))
              fail(`n${nd.id} snapshot has ${recordKey(r)} at ${off}, committed ${c}`)
          })
          stats.snapshotsInstalled++
          nd.snapshot = { id: o.snapshotId, records: o.records }
          nd.log = []
          nd.logStart = end
          nd.durableEnd = end
          for (const p of nd.pending) p.cap = Math.min(p.cap, end)
          break
        }
        case "SetTimer":
          queue.push(globalTime(nd, o.at), { _tag: "Timer", node: nd.id, incarnation: nd.incarnation, timer: o.timer })
          break
        case "HighWatermark":
          break
        case "Appended":
          if (probe !== null && probe.node === nd.id && probe.offset < 0) probe.offset = o.baseOffset
          break
        case "AppendRejected":
          break
        case "Transition":
          if (o.to === "Candidate") stats.elections++
          if (o.to === "Leader") {
            stats.leaders++
            const other = leaders.get(o.epoch)
            if (other !== undefined && other !== nd.id) fail(`two leaders in epoch ${o.epoch}: n${other} and n${nd.id}`)
            leaders.set(o.epoch, nd.id)
          }
          break
      }
    }
  }

  /** The high watermark of an incarnation never goes back, and what is below it is the one committed log. */
  const checkHighWatermark = (nd: SimNode) => {
    const hw = nd.core.highWatermark
    if (hw < nd.hwSeen) fail(`n${nd.id} high watermark went back from ${nd.hwSeen} to ${hw}`)
    if (hw === nd.hwSeen) return
    if (hw > endOffset(nd)) fail(`n${nd.id} high watermark ${hw} beyond its log end ${endOffset(nd)}`)
    for (let off = Math.max(0, nd.hwSeen); off < hw; off++) {
      const r = recordAt(nd, off)
      if (r === undefined) fail(`n${nd.id} has no record at committed offset ${off}`)
      else {
        const key = recordKey(r)
        const c = committed[off]
        if (c === undefined) committed[off] = key
        else if (c !== key) fail(`n${nd.id} committed ${key} at ${off}, but ${c} was committed there`)
      }
    }
    nd.hwSeen = hw
  }

  const start = (nd: SimNode) => {
    nd.alive = true
    nd.hwSeen = -1
    const config = simulationConfig(nd.id, ids, options.broken)
    const result = RaftNode.init<Value>(config, nd.quorum, recoveredView(nd), localTime(nd, now), rng.next())
    nd.core = result.state
    log(
      `n${nd.id} start ${JSON.stringify(nd.quorum)} log [${nd.logStart}, ${endOffset(nd)}) => ${summarize(result.outputs)}`
    )
    apply(nd, result.outputs)
  }

  const crash = (nd: SimNode) => {
    if (!nd.alive) return
    stats.crashes++
    nd.alive = false
    nd.incarnation++
    nd.log.length = Math.max(0, nd.durableEnd - nd.logStart)
    nd.pending = []
    log(`n${nd.id} CRASH (log kept to ${endOffset(nd)})`)
    checkDurableMajority(`the crash of n${nd.id}`)
  }

  /** Every committed record is durable (flushed log or snapshot) on a majority of the voters. */
  const checkDurableMajority = (after: string) => {
    const needed = Math.floor(n / 2) + 1
    for (let off = 0; off < committed.length; off++) {
      let count = 0
      for (const nd of nodes) {
        const r = off < nd.logStart ? nd.snapshot?.records[off] : off < nd.durableEnd ? recordAt(nd, off) : undefined
        if (r !== undefined && recordKey(r) === committed[off]) count++
      }
      if (count < needed)
        fail(`committed ${committed[off]} at ${off} is durable on ${count} voters only, after ${after}`)
    }
  }

  const currentLeader = (): SimNode | undefined => {
    let best: SimNode | undefined
    for (const nd of nodes)
      if (
        nd.alive &&
        nd.core.role._tag === "Leader" &&
        (best === undefined || RaftNode.epoch(nd.core) > RaftNode.epoch(best.core))
      )
        best = nd
    return best
  }

  const onSimEvent = (e: SimEvent) => {
    switch (e._tag) {
      case "Deliver": {
        const to = node(e.to)
        if (!to.alive || group.get(e.from) !== group.get(e.to)) return
        if (e.message._tag === "Request")
          return deliver(to, { _tag: "Request", from: e.from, request: e.message.request })
        // A response to a request of an earlier incarnation finds its connection closed.
        const sentBy = e.message.request
        if (!sentAtIncarnation.has(sentBy) || sentAtIncarnation.get(sentBy) !== to.incarnation) return
        return deliver(to, { _tag: "Response", from: e.from, request: sentBy, response: e.message.response })
      }
      case "Timer": {
        const nd = node(e.node)
        if (nd.alive && nd.incarnation === e.incarnation) deliver(nd, { _tag: "TimerFired", timer: e.timer })
        return
      }
      case "FlushDone": {
        const nd = node(e.node)
        if (!nd.alive || nd.incarnation !== e.incarnation) return
        nd.pending = nd.pending.filter((p) => p !== e.flush)
        const to = Math.min(e.flush.cap, endOffset(nd))
        if (to > nd.durableEnd) nd.durableEnd = to
        return deliver(nd, { _tag: "FlushCompleted", endOffset: to })
      }
      case "Crash": {
        if (faultsOver) return
        const nd = node(e.node)
        if (!nd.alive) return
        crash(nd)
        queue.push(now + e.restartAfter, { _tag: "Restart", node: nd.id })
        return
      }
      case "CrashLeader": {
        if (faultsOver) return
        const leader = currentLeader()
        if (leader === undefined) return
        crash(leader)
        queue.push(now + e.restartAfter, { _tag: "Restart", node: leader.id })
        return
      }
      case "Restart": {
        const nd = node(e.node)
        if (!nd.alive) start(nd)
        return
      }
      case "Partition": {
        if (faultsOver) return
        stats.partitions++
        const id = ++partitionSeq
        partitions.set(id, e.isolated)
        for (const v of e.isolated) group.set(v, id)
        log(`PARTITION ${e.isolated.join(",")} | rest`)
        queue.push(now + e.healAfter, { _tag: "HealPartition", id })
        return
      }
      case "HealPartition": {
        const isolated = partitions.get(e.id)
        if (isolated === undefined) return
        partitions.delete(e.id)
        for (const v of isolated) if (group.get(v) === e.id) group.set(v, 0)
        log(`HEAL ${isolated.join(",")}`)
        return
      }
      case "PowerLoss": {
        if (faultsOver) return
        const victims = [...ids].sort(() => rng.float() - 0.5).slice(0, e.count)
        log(`POWER LOSS ${victims.join(",")}`)
        for (const v of victims) {
          const nd = node(v)
          if (!nd.alive) continue
          crash(nd)
          queue.push(now + e.restartAfter + rng.int(0, 20), { _tag: "Restart", node: v })
        }
        return
      }
      case "Resign": {
        if (faultsOver) return
        const leader = currentLeader()
        if (leader === undefined) return
        deliver(leader, { _tag: "Resign" })
        // A graceful shutdown: the resigned leader stops a moment later and comes back.
        if (e.shutdown)
          queue.push(now + rng.int(0, 30), { _tag: "Crash", node: leader.id, restartAfter: rng.int(50, 400) })
        return
      }
      case "Snapshot": {
        const nd = node(e.node)
        if (nd.alive && nd.core.highWatermark > 0)
          deliver(nd, { _tag: "CreateSnapshot", endOffset: Math.min(nd.core.highWatermark, nd.core.log.flushedOffset) })
        return
      }
      case "Weather":
        if (faultsOver) return
        drop = e.drop
        duplicate = e.duplicate
        maxDelay = e.maxDelay
        maxFlushMs = e.maxFlushMs
        maxAppendGapMs = e.maxAppendGapMs
        log(
          `WEATHER drop ${e.drop.toFixed(2)} duplicate ${e.duplicate.toFixed(2)} delay <= ${e.maxDelay} flush <= ${e.maxFlushMs}`
        )
        return
      case "ClientAppend": {
        if (!faultsOver) queue.push(now + rng.int(5, maxAppendGapMs), { _tag: "ClientAppend" })
        const leader = currentLeader()
        if (leader === undefined) return
        const values = Array.from({ length: rng.int(1, 3) }, () => `v${++valueSeq}`)
        return deliver(leader, { _tag: "Append", values })
      }
      case "FaultsEnd": {
        faultsOver = true
        drop = 0
        duplicate = 0
        maxDelay = 10
        maxFlushMs = 10
        for (const [id, isolated] of partitions) {
          partitions.delete(id)
          for (const v of isolated) group.set(v, 0)
        }
        for (const nd of nodes) if (!nd.alive) start(nd)
        log("FAULTS END: healed, every voter up")
        return
      }
    }
  }

  // The fault schedule, drawn up front from the seed.
  for (let t = rng.int(20, 200); t < faultMs; t += rng.int(20, 200)) {
    const kind = rng.int(0, 10)
    const some = () => ids[rng.int(0, n - 1)] ?? 1
    if (kind <= 1) queue.push(t, { _tag: "Crash", node: some(), restartAfter: rng.int(5, 600) })
    else if (kind === 2) queue.push(t, { _tag: "CrashLeader", restartAfter: rng.int(5, 600) })
    else if (kind <= 4) {
      const size = rng.int(1, n - 1)
      const shuffled = [...ids].sort(() => rng.float() - 0.5)
      queue.push(t, { _tag: "Partition", isolated: shuffled.slice(0, size), healAfter: rng.int(50, 800) })
    } else if (kind === 5) queue.push(t, { _tag: "Resign", shutdown: rng.chance(0.5) })
    else if (kind === 6) queue.push(t, { _tag: "Snapshot", node: some() })
    else if (kind === 7)
      queue.push(t, { _tag: "PowerLoss", count: rng.int(Math.floor(n / 2) + 1, n), restartAfter: rng.int(5, 300) })
    else
      queue.push(t, {
        _tag: "Weather",
        drop: rng.chance(0.3) ? 0 : rng.float() * 0.3,
        duplicate: rng.float() * 0.2,
        maxDelay: rng.int(2, 40),
        maxFlushMs: rng.int(1, 40),
        maxAppendGapMs: rng.chance(0.5) ? 40 : rng.int(100, 600)
      })
  }
  queue.push(faultMs, { _tag: "FaultsEnd" })
  queue.push(rng.int(5, 40), { _tag: "ClientAppend" })

  let violation: string | null = null
  let recoveryMs = -1
  try {
    for (const nd of nodes) start(nd)
    for (;;) {
      const item = queue.pop()
      if (item === undefined) fail("nothing left to happen")
      else {
        now = item.at
        onSimEvent(item.event)
      }
      // Leaderless periods: no leader that committed in its epoch while a connected majority is up.
      const established = nodes.some(
        (nd) => nd.alive && nd.core.role._tag === "Leader" && nd.core.highWatermark > nd.core.role.epochStartOffset
      )
      if (established) {
        if (leaderlessSince >= 0) maxLeaderlessMs = Math.max(maxLeaderlessMs, now - leaderlessSince)
        leaderlessSince = -1
      } else if (leaderlessSince < 0 || !majorityUp()) leaderlessSince = majorityUp() ? now : -1
      if (!faultsOver) continue
      if (now > faultMs + livenessBoundMs)
        fail(
          stableAt < 0
            ? `no leader followed by every voter within ${livenessBoundMs} ms after the faults`
            : "the probe record did not commit on every voter"
        )
      const leader = currentLeader()
      if (stableAt < 0 && leader !== undefined && leader.core.highWatermark > 0) {
        const e = RaftNode.epoch(leader.core)
        const followed = nodes.every(
          (nd) =>
            nd === leader ||
            (nd.core.role._tag === "Follower" && nd.core.role.leaderId === leader.id && RaftNode.epoch(nd.core) === e)
        )
        if (followed) {
          stableAt = now
          recoveryMs = now - faultMs
          probe = { value: `probe${++probes}`, offset: -1, node: leader.id, epoch: e }
          deliver(leader, { _tag: "Append", values: [probe.value] })
          if (probe.offset < 0) fail("the leader refused the probe")
        }
      }
      if (probe !== null && probe.offset >= 0) {
        const at = probe.offset
        if (nodes.every((nd) => nd.core.highWatermark > at)) {
          const r = recordAt(node(probe.node), at)
          if (r === undefined || r._tag !== "Data" || r.value !== probe.value) fail(`the probe is not at ${at}`)
          break
        }
        // The probe's leader lost its epoch before the probe committed (it may be truncated): probe again.
        const owner = node(probe.node)
        if (!owner.alive || owner.core.role._tag !== "Leader" || RaftNode.epoch(owner.core) !== probe.epoch) {
          log(`probe ${probe.value} at ${at} lost with its leader's epoch; waiting for the next leader`)
          probe = null
          stableAt = -1
        }
      }
    }
    finalChecks()
  } catch (e) {
    if (e instanceof Violation) violation = e.message
    else throw e
  }

  function majorityUp(): boolean {
    const counts = new Map<number, number>()
    for (const nd of nodes)
      if (nd.alive) counts.set(group.get(nd.id) ?? 0, (counts.get(group.get(nd.id) ?? 0) ?? 0) + 1)
    for (const c of counts.values()) if (c >= Math.floor(n / 2) + 1) return true
    return false
  }

  function finalChecks(): void {
    checkDurableMajority("the run")
    // Every voter's log equals the committed log below the lowest high watermark; nothing committed is lost.
    const minHw = Math.min(...nodes.map((nd) => nd.core.highWatermark))
    for (const nd of nodes)
      for (let off = 0; off < minHw; off++) {
        const r = recordAt(nd, off)
        if (r === undefined || recordKey(r) !== committed[off])
          fail(`n${nd.id} at ${off} has ${r === undefined ? "nothing" : recordKey(r)}, committed ${committed[off]}`)
      }
  }

  return {
    seed,
    voters: n,
    ok: violation === null,
    violation,
    stats: {
      ...stats,
      committed: Math.min(...nodes.map((nd) => nd.core.highWatermark)),
      recoveryMs,
      maxLeaderlessMs,
      simulatedMs: now
    },
    trace
  }
}

// ---------------------------------------------------------------------------------------------
// trace lines

const requestLine = (r: RaftRequest): string => {
  switch (r._tag) {
    case "VoteRequest":
      return `${r.preVote ? "PreVote" : "Vote"}(e${r.replicaEpoch} last e${r.lastOffsetEpoch}@${r.lastOffset})`
    case "BeginQuorumEpochRequest":
      return `BeginQuorumEpoch(e${r.leaderEpoch})`
    case "EndQuorumEpochRequest":
      return `EndQuorumEpoch(e${r.leaderEpoch} ${r.preferredCandidates.map((c) => c.candidateId).join(",")})`
    case "FetchRequest":
      return `Fetch(e${r.currentLeaderEpoch} @${r.fetchOffset} last e${r.lastFetchedEpoch})`
    case "FetchSnapshotRequest":
      return `FetchSnapshot(${r.snapshotId.endOffset}/e${r.snapshotId.epoch})`
  }
}

const responseLine = (r: RaftResponse<Value>): string => {
  const err = r.errorCode !== 0 ? ` err ${r.errorCode}` : ""
  switch (r._tag) {
    case "VoteResponse":
      return `Vote${r.voteGranted ? "Granted" : "Rejected"}(e${r.leaderEpoch} leader ${r.leaderId}${err})`
    case "BeginQuorumEpochResponse":
    case "EndQuorumEpochResponse":
      return `${r._tag.replace("Response", "")}Ok(e${r.leaderEpoch}${err})`
    case "FetchResponse": {
      const extra =
        r.divergingEpoch !== null
          ? ` diverging e${r.divergingEpoch.epoch}@${r.divergingEpoch.endOffset}`
          : r.snapshotId !== null
            ? ` snapshot ${r.snapshotId.endOffset}/e${r.snapshotId.epoch}`
            : ` ${r.records.length} records`
      return `FetchResponse(hw ${r.highWatermark}${extra}${err})`
    }
    case "FetchSnapshotResponse":
      return `FetchSnapshotResponse(${r.snapshotId.endOffset}/e${r.snapshotId.epoch} ${r.unalignedRecords.length} records${err})`
  }
}

const summarizeOne = (o: RaftOutput<Value>): string => {
  switch (o._tag) {
    case "PersistQuorumState":
      return `persist(e${o.state.leaderEpoch} voted ${o.state.votedId} leader ${o.state.leaderId})`
    case "Send":
      return `-> ${o.to} ${requestLine(o.message)}`
    case "Respond":
      return `-> ${o.to} ${responseLine(o.response)}`
    case "RespondFetch":
      return o.readTo > o.readFrom
        ? `-> ${o.to} FetchResponse(hw ${o.response.highWatermark} records [${o.readFrom}, ${o.readTo}))`
        : `-> ${o.to} ${responseLine(o.response)}`
    case "RespondFetchSnapshot":
      return `-> ${o.to} ${responseLine(o.response)}`
    case "AppendLog":
      return `append ${o.records.map(recordKey).join(" ")}`
    case "TruncateLog":
      return `truncate to ${o.endOffset}`
    case "Flush":
      return `flush ${o.endOffset}`
    case "CreateSnapshot":
      return `snapshot ${o.snapshotId.endOffset}/e${o.snapshotId.epoch}`
    case "InstallSnapshot":
      return `install snapshot ${o.snapshotId.endOffset}/e${o.snapshotId.epoch}`
    case "SetTimer":
      return ""
    case "HighWatermark":
      return `hw ${o.offset}`
    case "Appended":
      return `appended ${o.baseOffset}..${o.lastOffset}`
    case "AppendRejected":
      return `append rejected ${o.errorCode}`
    case "Transition":
      return `${o.from} -> ${o.to}`
  }
}

const summarize = (outputs: ReadonlyArray<RaftOutput<Value>>): string =>
  outputs
    .map(summarizeOne)
    .filter((s) => s.length > 0)
    .join("; ")

const stateLine = (s: RaftNode.RaftState): string =>
  `${s.role._tag} e${s.quorum.leaderEpoch} voted ${s.quorum.votedId} leo ${s.log.endOffset} flushed ${s.log.flushedOffset} hw ${s.highWatermark}`
