/**
 * The simulation campaign on demand:
 *   pnpm --filter @clustermirror/raft simulate --seeds 100000 [--from 0] [--voters 3|5]
 *   pnpm --filter @clustermirror/raft simulate --seed S        (replays one seed with its trace)
 *   ... --broken ackBeforeFlush|voteTwice                     (runs a deliberately broken variant)
 * A failing seed is replayed with its trace (the last 200 steps) and the run exits 1. Prints
 * seeds/s, elections, and the election figures in simulated ms.
 */
import { performance } from "node:perf_hooks"
import * as RaftSimulation from "../src/RaftSimulation.js"

const args = process.argv.slice(2)
const flag = (name: string): string | undefined => {
  const i = args.indexOf(`--${name}`)
  return i >= 0 ? args[i + 1] : undefined
}
const num = (name: string, dflt: number): number => {
  const v = flag(name)
  if (v === undefined) return dflt
  const n = Number(v)
  if (!Number.isSafeInteger(n) || n < 0) {
    process.stderr.write(`--${name} wants a non-negative integer, got ${v}\n`)
    process.exit(2)
  }
  return n
}
const brokenName = flag("broken")
if (brokenName !== undefined && brokenName !== "ackBeforeFlush" && brokenName !== "voteTwice") {
  process.stderr.write(`--broken is ackBeforeFlush or voteTwice, got ${brokenName}\n`)
  process.exit(2)
}
const broken = brokenName === undefined ? undefined : { [brokenName]: true }
const votersFlag = flag("voters")
const voters = votersFlag === undefined ? undefined : num("voters", 3)
const base = {
  ...(voters !== undefined ? { voters } : {}),
  ...(broken !== undefined ? { broken } : {})
}

const printTrace = (seed: number) => {
  const replay = RaftSimulation.run({ ...base, seed, trace: true })
  const lines = replay.trace
  process.stdout.write(
    `--- seed ${seed} (${replay.voters} voters): last ${Math.min(200, lines.length)} of ${lines.length} steps\n`
  )
  for (const line of lines.slice(-200)) process.stdout.write(`${line}\n`)
  process.stdout.write(`--- ${replay.violation ?? "no violation"}\n`)
}

const single = flag("seed")
if (single !== undefined) {
  const seed = num("seed", 0)
  const r = RaftSimulation.run({ ...base, seed, trace: true })
  if (r.ok && !args.includes("--trace")) {
    process.stdout.write(`seed ${seed}: ok ${JSON.stringify(r.stats)}\n`)
  } else printTrace(seed)
  process.exit(r.ok ? 0 : 1)
}

const seeds = num("seeds", 10_000)
const from = num("from", 0)
const started = performance.now()
let elections = 0
let leaders = 0
let crashes = 0
let partitions = 0
let snapshots = 0
let truncations = 0
let steps = 0
let maxRecovery = 0
let maxLeaderless = 0
let failures = 0
const recoveries: Array<number> = []
for (let seed = from; seed < from + seeds; seed++) {
  const r = RaftSimulation.run({ ...base, seed })
  elections += r.stats.elections
  leaders += r.stats.leaders
  crashes += r.stats.crashes
  partitions += r.stats.partitions
  snapshots += r.stats.snapshotsInstalled
  truncations += r.stats.divergingTruncations
  steps += r.stats.steps
  if (!r.ok) {
    failures++
    process.stdout.write(`seed ${seed} FAILED: ${r.violation}\n`)
    printTrace(seed)
    break
  }
  recoveries.push(r.stats.recoveryMs)
  maxRecovery = Math.max(maxRecovery, r.stats.recoveryMs)
  maxLeaderless = Math.max(maxLeaderless, r.stats.maxLeaderlessMs)
  if ((seed - from + 1) % 10_000 === 0) process.stdout.write(`... ${seed - from + 1} seeds\n`)
}
const seconds = (performance.now() - started) / 1000
recoveries.sort((a, b) => a - b)
const pct = (p: number) => recoveries[Math.min(recoveries.length - 1, Math.floor(p * recoveries.length))] ?? 0
process.stdout.write(
  `${recoveries.length} seeds passed in ${seconds.toFixed(1)} s (${(recoveries.length / seconds).toFixed(0)} seeds/s)\n` +
    `steps ${steps}, crashes ${crashes}, partitions ${partitions}, diverging truncations ${truncations}, snapshots installed ${snapshots}\n` +
    `elections ${elections}, leaders elected ${leaders}\n` +
    `election after the faults stop (simulated ms): p50 ${pct(0.5)}, p99 ${pct(0.99)}, max ${maxRecovery}\n` +
    `longest leaderless time with a connected majority up (simulated ms): ${maxLeaderless}\n`
)
process.exit(failures > 0 ? 1 : 0)
