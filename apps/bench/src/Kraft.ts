/**
 * The `kraft` suite: our KRaft quorum (`@clustermirror/raft-runtime`) as separate voter processes on
 * real files and TCP (`KraftVoter`).
 *
 * Commit latency: 1 voter, then 3 voters; ~100 B records (a metadata record's size) appended one at a
 * time (sequential) and then `pipelineDepth` at a time (pipelined); each append is timed inside the
 * leader's process from `append` to its commit (the high watermark passing it, every voter of the
 * majority having fsynced it). Baselines in the same run, on the same disk: a raw `write` + `fsync` of
 * the same bytes to a file per record (sequential), and per group of `pipelineDepth` records (pipelined,
 * each record of a group waiting for the group's fsync). Reported: p50/p99/max in ms, records/s, and
 * the ratios to the baseline's p50 and p99.
 *
 * Failover: 3 voters; each round finds the leader every voter agrees on, sends it SIGKILL (or SIGSTOP),
 * and times, from the signal, until both survivors know the same new leader in a later epoch, and until
 * an append to it commits. Then the killed voter is started again on its data dir and port (the
 * stopped one gets SIGCONT), and the next round waits until all three agree on a leader and have
 * caught up. Reported: min/p50/p90/max of both times and the rounds over 3 s, with the quorum timeouts
 * used. It measures and checks that every round ends with a committed append; it never judges a number.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync, closeSync, fsyncSync, openSync, writeSync } from "node:fs"
import { Buffer } from "node:buffer"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { performance } from "node:perf_hooks"
import type { RaftConfig } from "@clustermirror/raft"
import * as KraftVoter from "./KraftVoter.js"

export type Signal = "SIGKILL" | "SIGSTOP"

export interface Options {
  /** Failover rounds per signal. */
  readonly rounds: number
  readonly signals: ReadonlyArray<Signal>
  /** Whether the commit latency runs (the failover always runs). */
  readonly latency: boolean
  readonly sequentialAppends: number
  readonly pipelinedAppends: number
  readonly pipelineDepth: number
  readonly recordBytes: number
  readonly timeouts: KraftVoter.Timeouts
  /** How long any one wait of a round (an election, a commit, a restart's catch-up) may take. */
  readonly waitMs: number
}

/**
 * Kafka's quorum defaults: controller.quorum.election.timeout.ms=1000, fetch.timeout.ms=2000,
 * election.backoff.max.ms=1000, request.timeout.ms=2000. A follower fetches again 10 ms after an empty
 * fetch (Kafka's leader holds such a fetch up to 500 ms instead; our runtime has no long poll yet).
 */
export const KAFKA_TIMEOUTS: KraftVoter.Timeouts = {
  electionTimeoutMs: 1000,
  fetchTimeoutMs: 2000,
  electionBackoffMaxMs: 1000,
  requestTimeoutMs: 2000,
  fetchWaitMs: 10
}

export const defaults: Options = {
  rounds: 20,
  signals: ["SIGKILL", "SIGSTOP"],
  latency: true,
  sequentialAppends: 1000,
  pipelinedAppends: 5000,
  pipelineDepth: 32,
  recordBytes: 100,
  timeouts: KAFKA_TIMEOUTS,
  waitMs: 30_000
}

/** `--quick`: 3 rounds per signal and fewer appends. */
export const quick: Options = { ...defaults, rounds: 3, sequentialAppends: 200, pipelinedAppends: 1000 }

/** The failover's limit of issue 2.6: a new leader within 3 s. */
export const FAILOVER_LIMIT_MS = 3000

export interface Distribution {
  readonly count: number
  readonly min: number
  readonly p50: number
  readonly p90: number
  readonly p99: number
  readonly max: number
}

/** The `p`-th percentile (0 < p <= 100) of ascending `sorted` by nearest rank. */
export const percentile = (sorted: ReadonlyArray<number>, p: number): number => {
  if (sorted.length === 0) return Number.NaN
  const rank = Math.ceil((p / 100) * sorted.length)
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!
}

export const distribution = (samples: ReadonlyArray<number>): Distribution => {
  const sorted = [...samples].sort((a, b) => a - b)
  return {
    count: sorted.length,
    min: sorted[0] ?? Number.NaN,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: sorted[sorted.length - 1] ?? Number.NaN
  }
}

/** One commit latency run: latencies in ms. */
export interface LatencyRun {
  readonly setup: string
  readonly mode: "sequential" | "pipelined"
  readonly latency: Distribution
  readonly recordsPerSec: number
  /** Leader changes during the run (a new leader took the rest of the appends). */
  readonly leaderChanges: number
  /** Appends refused or lost by a voter that no longer led (appended again to the next leader). */
  readonly failedAppends: number
}

export interface LatencyRow extends LatencyRun {
  /** p50 and p99 over the baseline's of the same mode (1 for the baseline itself). */
  readonly p50VsBaseline: number
  readonly p99VsBaseline: number
}

export const BASELINE = "write+fsync"

/** Adds each row's ratios to the baseline row of its mode. */
export const withRatios = (runs: ReadonlyArray<LatencyRun>): LatencyRow[] =>
  runs.map((r) => {
    const base = runs.find((b) => b.setup === BASELINE && b.mode === r.mode)
    return {
      ...r,
      p50VsBaseline: base === undefined ? Number.NaN : r.latency.p50 / base.latency.p50,
      p99VsBaseline: base === undefined ? Number.NaN : r.latency.p99 / base.latency.p99
    }
  })

export interface FailoverRound {
  readonly signal: Signal
  readonly round: number
  readonly oldLeader: number
  readonly oldEpoch: number
  readonly newLeader: number
  readonly newEpoch: number
  /** From the signal until both survivors know the new leader. */
  readonly electedMs: number
  /** From the signal until an append to the new leader committed. */
  readonly committedMs: number
}

export interface FailoverSummary {
  readonly signal: Signal
  readonly elected: Distribution
  readonly committed: Distribution
  /** Rounds whose new leader was known more than `FAILOVER_LIMIT_MS` after the signal. */
  readonly electedOver3s: number
  /** Rounds whose append committed more than `FAILOVER_LIMIT_MS` after the signal. */
  readonly over3s: number
}

export const summarizeFailover = (rounds: ReadonlyArray<FailoverRound>, signal: Signal): FailoverSummary => {
  const mine = rounds.filter((r) => r.signal === signal)
  return {
    signal,
    elected: distribution(mine.map((r) => r.electedMs)),
    committed: distribution(mine.map((r) => r.committedMs)),
    electedOver3s: mine.filter((r) => r.electedMs > FAILOVER_LIMIT_MS).length,
    over3s: mine.filter((r) => r.committedMs > FAILOVER_LIMIT_MS).length
  }
}

const fmt = (n: number, digits = 1): string => (Number.isFinite(n) ? n.toFixed(digits) : "-")

const render = (header: ReadonlyArray<string>, body: ReadonlyArray<ReadonlyArray<string>>): string => {
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)))
  const line = (cells: ReadonlyArray<string>): string =>
    cells.map((x, i) => (i === 0 ? x.padEnd(widths[i]!) : x.padStart(widths[i]!))).join("  ")
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...body.map(line)].join("\n")
}

export const latencyTable = (rows: ReadonlyArray<LatencyRow>): string =>
  render(
    [
      "setup",
      "mode",
      "appends",
      "p50 ms",
      "p99 ms",
      "max ms",
      "records/s",
      "p50 vs baseline",
      "p99 vs baseline",
      "leader changes"
    ],
    rows.map((r) => [
      r.setup,
      r.mode,
      String(r.latency.count),
      fmt(r.latency.p50, 2),
      fmt(r.latency.p99, 2),
      fmt(r.latency.max, 2),
      fmt(r.recordsPerSec, 0),
      `${fmt(r.p50VsBaseline, 2)}x`,
      `${fmt(r.p99VsBaseline, 2)}x`,
      r.leaderChanges === 0 ? "0" : `${r.leaderChanges} (${r.failedAppends} appends again)`
    ])
  )

export const failoverTable = (summaries: ReadonlyArray<FailoverSummary>): string =>
  render(
    ["signal", "until", "rounds", "min ms", "p50 ms", "p90 ms", "max ms", "over 3 s"],
    summaries
      .flatMap((s) => [
        [s.signal, "new leader known", s.elected, String(s.electedOver3s)] as const,
        [s.signal, "append committed", s.committed, String(s.over3s)] as const
      ])
      .map(([signal, until, d, over]) => [
        signal,
        until,
        String(d.count),
        fmt(d.min, 0),
        fmt(d.p50, 0),
        fmt(d.p90, 0),
        fmt(d.max, 0),
        over
      ])
  )

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/** Probes every `everyMs` until `probe` gives a value; fails after `ms`. */
const waitUntil = async <A>(
  what: string,
  ms: number,
  probe: () => Promise<A | undefined> | A | undefined,
  everyMs = 2
): Promise<A> => {
  const until = performance.now() + ms
  for (;;) {
    const found = await probe()
    if (found !== undefined) return found
    if (performance.now() > until) throw new Error(`no ${what} within ${ms} ms`)
    await sleep(everyMs)
  }
}

/** A quorum of voter processes; a killed voter's slot gets its restarted process. */
export interface Quorum {
  readonly voters: Array<KraftVoter.VoterProcess>
  readonly endpoints: ReadonlyArray<RaftConfig.VoterEndpoint>
  readonly settings: ReadonlyArray<KraftVoter.Settings>
}

export const startQuorum = async (size: number, root: string, timeouts: KraftVoter.Timeouts): Promise<Quorum> => {
  const ids = Array.from({ length: size }, (_, i) => i + 1)
  const first = ids.map((id) => ({ id, voters: ids, dataDir: join(root, `voter-${id}`), port: 0, timeouts }))
  const voters = await Promise.all(first.map((s) => KraftVoter.spawn(s)))
  const endpoints = voters.map((v) => ({ id: v.id, host: "127.0.0.1", port: v.port }))
  await Promise.all(voters.map((v) => v.start(endpoints)))
  return { voters, endpoints, settings: first.map((s, i) => ({ ...s, port: voters[i]!.port })) }
}

export const stopQuorum = (q: Quorum): Promise<unknown> => Promise.all(q.voters.map((v) => v.stop()))

/** The one leader all of `voters` know, in one epoch, when it is one of them. */
const agreed = (voters: ReadonlyArray<KraftVoter.VoterProcess>): KraftVoter.VoterProcess | undefined => {
  const first = voters[0]?.view()
  if (first === undefined || first.leaderId < 0) return undefined
  const same = voters.every((v) => v.view().leaderId === first.leaderId && v.view().leaderEpoch === first.leaderEpoch)
  return same ? voters.find((v) => v.id === first.leaderId) : undefined
}

export const agreedLeader = (voters: ReadonlyArray<KraftVoter.VoterProcess>, ms: number) =>
  waitUntil("leader every voter agrees on", ms, () => agreed(voters))

/** Every voter's high watermark reaches the leader's. */
const caughtUp = async (q: Quorum, ms: number): Promise<void> => {
  const leader = await agreedLeader(q.voters, ms)
  const target = (await leader.status()).highWatermark
  await waitUntil(
    `high watermark ${target} on every voter`,
    ms,
    async () => {
      const hws = await Promise.all(q.voters.map((v) => v.status().then((s) => s.highWatermark)))
      return hws.every((h) => h >= target) ? true : undefined
    },
    25
  )
}

const log = (line: string): void => {
  process.stdout.write(`${line}\n`)
}

/** Times `count` raw writes of `recordBytes` to a file with an fsync after every `group` of them. */
export const baseline = (file: string, count: number, recordBytes: number, group: number): LatencyRun => {
  const fd = openSync(file, "w")
  const latencies: Array<number> = []
  const t0 = performance.now()
  try {
    for (let i = 0; i < count; i += group) {
      const n = Math.min(group, count - i)
      const start = performance.now()
      for (let j = 0; j < n; j++) writeSync(fd, Buffer.alloc(recordBytes, (i + j) % 251))
      fsyncSync(fd)
      const ms = performance.now() - start
      for (let j = 0; j < n; j++) latencies.push(ms)
    }
  } finally {
    closeSync(fd)
  }
  return {
    setup: BASELINE,
    mode: group === 1 ? "sequential" : "pipelined",
    latency: distribution(latencies),
    recordsPerSec: count / ((performance.now() - t0) / 1000),
    leaderChanges: 0,
    failedAppends: 0
  }
}

/**
 * Appends `count` records to whichever voter leads: when the leader changes during the run (its
 * appends fail with `NotLeader`), the rest go to the next leader once every voter knows it. The time
 * spent waiting for that election is not counted in records/s.
 */
const appendAll = async (q: Quorum, o: Options, count: number, depth: number) => {
  const latenciesUs: Array<number> = []
  const epochs = new Set<number>()
  let seconds = 0
  let failed = 0
  const deadline = performance.now() + Math.max(o.waitMs, count * 100)
  while (latenciesUs.length < count) {
    if (performance.now() > deadline)
      throw new Error(`${count - latenciesUs.length} of ${count} appends never committed`)
    const leader = await agreedLeader(q.voters, o.waitMs)
    epochs.add(leader.view().leaderEpoch)
    const a = await leader.append(count - latenciesUs.length, o.recordBytes, depth)
    latenciesUs.push(...a.latenciesUs)
    seconds += a.seconds
    failed += a.notLeader
    if (a.notLeader > 0) await sleep(20)
  }
  return { latenciesUs, seconds, failed, leaderChanges: epochs.size - 1 }
}

const latencyRuns = async (o: Options, size: number, root: string): Promise<LatencyRun[]> => {
  const q = await startQuorum(size, root, o.timeouts)
  try {
    await appendAll(q, o, 50, 1)
    const seq = await appendAll(q, o, o.sequentialAppends, 1)
    const pipe = await appendAll(q, o, o.pipelinedAppends, o.pipelineDepth)
    const setup = `${size} voter${size === 1 ? "" : "s"}`
    const row = (mode: LatencyRun["mode"], a: typeof seq): LatencyRun => ({
      setup,
      mode,
      latency: distribution(a.latenciesUs.map((us) => us / 1000)),
      recordsPerSec: a.latenciesUs.length / a.seconds,
      leaderChanges: a.leaderChanges,
      failedAppends: a.failed
    })
    return [row("sequential", seq), row("pipelined", pipe)]
  } finally {
    await stopQuorum(q)
  }
}

/** One failover round on `q` (3 voters, caught up); leaves `q` with 3 running voters. */
export const failoverRound = async (q: Quorum, o: Options, signal: Signal, round: number): Promise<FailoverRound> => {
  const leader = await agreedLeader(q.voters, o.waitMs)
  const old = leader.view()
  const survivors = q.voters.filter((v) => v !== leader)
  const t0 = performance.now()
  leader.signal(signal)
  const elected = await waitUntil(`new leader after ${signal} of voter ${leader.id}`, o.waitMs, () => {
    const next = agreed(survivors)
    return next !== undefined && next.view().leaderEpoch > old.leaderEpoch ? next : undefined
  })
  const electedMs = performance.now() - t0
  const newView = elected.view()
  // The append goes to the leader the survivors agree on; if leadership moved meanwhile, to the next one.
  let target = elected
  for (;;) {
    const a = await target.append(1, o.recordBytes, 1)
    if (a.latenciesUs.length === 1) break
    if (performance.now() - t0 > o.waitMs) throw new Error(`no append committed within ${o.waitMs} ms of ${signal}`)
    await sleep(2)
    target = await agreedLeader(survivors, o.waitMs)
  }
  const committedMs = performance.now() - t0
  const slot = q.voters.indexOf(leader)
  if (signal === "SIGKILL") {
    await leader.exited
    const restarted = await KraftVoter.spawn(q.settings[slot]!)
    await restarted.start(q.endpoints)
    q.voters[slot] = restarted
  } else leader.signal("SIGCONT")
  await caughtUp(q, o.waitMs)
  return {
    signal,
    round,
    oldLeader: old.leaderId,
    oldEpoch: old.leaderEpoch,
    newLeader: newView.leaderId,
    newEpoch: newView.leaderEpoch,
    electedMs,
    committedMs
  }
}

export const failover = async (o: Options, root: string): Promise<FailoverRound[]> => {
  const q = await startQuorum(3, root, o.timeouts)
  const rounds: FailoverRound[] = []
  try {
    await caughtUp(q, o.waitMs)
    for (const signal of o.signals)
      for (let i = 0; i < o.rounds; i++) {
        const r = await failoverRound(q, o, signal, i)
        log(
          `${signal} round ${i + 1}/${o.rounds}: voter ${r.oldLeader} (epoch ${r.oldEpoch}) -> voter ${r.newLeader} ` +
            `(epoch ${r.newEpoch}): new leader known after ${fmt(r.electedMs, 0)} ms, append committed after ${fmt(r.committedMs, 0)} ms`
        )
        rounds.push(r)
      }
  } finally {
    // A stopped voter cannot die of SIGKILL until it runs again.
    for (const v of q.voters) v.signal("SIGCONT")
    await stopQuorum(q)
  }
  return rounds
}

export interface Result {
  readonly suite: "kraft"
  readonly date: string
  readonly options: Options
  readonly latency: ReadonlyArray<LatencyRow>
  readonly failover: ReadonlyArray<FailoverSummary>
  readonly rounds: ReadonlyArray<FailoverRound>
}

const timeoutsLine = (t: KraftVoter.Timeouts): string =>
  `controller.quorum.election.timeout.ms=${t.electionTimeoutMs} fetch.timeout.ms=${t.fetchTimeoutMs} ` +
  `election.backoff.max.ms=${t.electionBackoffMaxMs} request.timeout.ms=${t.requestTimeoutMs}, ` +
  `a follower fetches again ${t.fetchWaitMs} ms after an empty fetch`

/** Runs the suite, prints its tables and saves `kraft.json` in `resultsDir` (when given). */
export const run = async (o: Options, resultsDir: string | undefined): Promise<Result> => {
  const root = mkdtempSync(join(tmpdir(), "clustermirror-bench-kraft-"))
  try {
    log(`quorum timeouts: ${timeoutsLine(o.timeouts)}`)
    let latency: LatencyRow[] = []
    if (o.latency) {
      const runs: LatencyRun[] = []
      mkdirSync(join(root, "baseline"), { recursive: true })
      runs.push(baseline(join(root, "baseline", "sequential"), o.sequentialAppends, o.recordBytes, 1))
      runs.push(baseline(join(root, "baseline", "pipelined"), o.pipelinedAppends, o.recordBytes, o.pipelineDepth))
      for (const size of [1, 3]) {
        runs.push(...(await latencyRuns(o, size, join(root, `latency-${size}`))))
        log(`commit latency on ${size} voter(s) measured`)
      }
      latency = withRatios(runs)
      log(
        `\ncommit latency of ${o.recordBytes} B records, append -> committed in the leader ` +
          `(sequential: one at a time; pipelined: ${o.pipelineDepth} in flight; baseline pipelined: one fsync per ${o.pipelineDepth})`
      )
      log(latencyTable(latency))
    }
    const rounds = await failover(o, join(root, "failover"))
    const failoverSummaries = o.signals.map((s) => summarizeFailover(rounds, s))
    log(`\ncontroller failover, 3 voters, ${o.rounds} rounds per signal (${timeoutsLine(o.timeouts)})`)
    log(failoverTable(failoverSummaries))
    const result: Result = {
      suite: "kraft",
      date: new Date().toISOString(),
      options: o,
      latency,
      failover: failoverSummaries,
      rounds
    }
    if (resultsDir !== undefined) {
      const file = join(resultsDir, "kraft.json")
      mkdirSync(resultsDir, { recursive: true })
      writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`)
      log(`saved ${file}`)
    }
    return result
  } finally {
    rmSync(root, { recursive: true, force: true })
  }
}
