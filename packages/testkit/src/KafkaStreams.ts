/**
 * A Kafka Streams application as a peer: `java/streams/WordCountStreams.java`, run on Apache Kafka Streams
 * (`KafkaPeer.streamsLibs()`), counts the words of an input topic with `exactly_once_v2`:
 *
 *   input lines → flatMapValues(split) → groupBy(word) (`<app id>-words-repartition`)
 *               → count (`<app id>-counts-changelog`) → output (word → count as a decimal string)
 *
 * `startWordCount` resolves once the application reports RUNNING; `close()` closes it (it leaves its group,
 * so a restart gets the tasks at once), `kill()` SIGKILLs it. `readCounts` reads the output topic with
 * read_committed (kcat) and keeps the last count per word; `awaitCounts` polls it until it shows the
 * counts a test expects; `expectedCounts` counts lines the way the application does, `sampleLines` makes
 * lines whose words get different counts. It owns only the JVM it started; the state dir is the caller's.
 */
import { type ChildProcess, spawn } from "node:child_process"
import * as KafkaPeer from "./KafkaPeer.js"
import * as JavaClasses from "./internal/JavaClasses.js"
import * as Process from "./internal/Process.js"
import * as Kcat from "./Kcat.js"
import type * as Properties from "./Properties.js"
import { PeerStartError, PeerStopError } from "./TestkitError.js"
import * as Wait from "./Wait.js"

export type ExitInfo = Process.ExitInfo

export const MAIN_CLASS = "WordCountStreams"

/** Kafka Streams' client states, as the application prints them. */
export const STATES = [
  "CREATED",
  "REBALANCING",
  "RUNNING",
  "PENDING_SHUTDOWN",
  "NOT_RUNNING",
  "PENDING_ERROR",
  "ERROR"
] as const
export type State = (typeof STATES)[number]

const isState = (s: string): s is State => (STATES as ReadonlyArray<string>).includes(s)

export interface WordCountOptions {
  readonly bootstrap: string
  /** `application.id`: also the group id and the prefix of the internal topics. */
  readonly applicationId: string
  readonly inputTopic: string
  readonly outputTopic: string
  /** `state.dir`: where the RocksDB stores and checkpoints live. */
  readonly stateDir: string
  /** `commit.interval.ms` (default 200). */
  readonly commitIntervalMs?: number
  /** `replication.factor` of the internal topics (default 3). */
  readonly replicationFactor?: number
  /** Further Streams settings (prefixed ones such as `consumer.*` included), over the generated ones. */
  readonly properties?: Properties.Properties
  /** A libs folder instead of resolving `version`. */
  readonly libs?: string
  readonly version?: string
  /** How long the application may take to reach RUNNING (default 120 s). */
  readonly startTimeoutMs?: number
}

export interface WordCountHandle {
  readonly pid: number
  /** Every state the application went through, in order. */
  states(): ReadonlyArray<State>
  /** Resolves once the application reached `state` (now or earlier); rejects if it exits first or times out. */
  awaitState(state: State, timeoutMs?: number): Promise<void>
  /** Closes the application (commits, leaves the group) and waits for the JVM to exit cleanly. */
  close(): Promise<ExitInfo>
  /** SIGKILLs the JVM: nothing is committed or closed. */
  kill(): Promise<void>
  isAlive(): boolean
  /** The recent stdout+stderr of the JVM. */
  output(): string
}

const DEFAULT_START_TIMEOUT_MS = 120_000
const CLOSE_TIMEOUT_MS = 60_000
const OUTPUT_TAIL_CHARS = 64 * 1024

/** The words of `line` as the application splits them: lower case, on whitespace. */
export const words = (line: string): ReadonlyArray<string> =>
  line
    .toLowerCase()
    .split(/\s+/)
    .filter((w) => w !== "")

/** The count per word of `lines`, as the application ends up with after reading all of them. */
export const expectedCounts = (lines: Iterable<string>): Map<string, number> => {
  const counts = new Map<string, number>()
  for (const line of lines) for (const w of words(line)) counts.set(w, (counts.get(w) ?? 0) + 1)
  return counts
}

/** Words separated by one or more blanks, as people type them. */
const SEPARATORS = ["  ", " \t", " "]

/**
 * Line `i` of a phase: 1 to 6 of 20 words, mixed case, picked so that the words get different counts; the
 * words of phase `n + 1` are those of phase `n` shifted by 4, so two phases share 16 words and the later one
 * brings 4 new ones.
 */
export const sampleLines = (phase: number, count: number): ReadonlyArray<string> =>
  Array.from({ length: count }, (_, i) =>
    Array.from({ length: 1 + ((i * 5 + phase) % 6) }, (_, j) => {
      const w = `word${phase * 4 + ((i * 7 + j * j * 3) % 20)}`
      return j % 2 === 1 ? w.toUpperCase() : w
    }).join(SEPARATORS[i % SEPARATORS.length])
  )

/** The last count per word of `<word> <count>` lines in partition order (a word stays in one partition). */
export const parseCounts = (stdout: string): Map<string, number> => {
  const counts = new Map<string, number>()
  for (const line of stdout.split("\n")) {
    const m = /^(\S+) (\d+)$/.exec(line)
    if (m !== null) counts.set(m[1]!, Number(m[2]))
  }
  return counts
}

/** The output topic read from the beginning up to its last stable offset with read_committed. */
export const readCounts = async (bootstrap: string, topic: string): Promise<Map<string, number>> => {
  const { stdout } = await Kcat.kcat([
    "-b",
    bootstrap,
    "-C",
    "-t",
    topic,
    "-e",
    "-q",
    "-o",
    "beginning",
    "-X",
    "isolation.level=read_committed",
    "-f",
    "%k %s\\n"
  ])
  return parseCounts(stdout)
}

/** `counts` as a plain object with sorted keys, for readable assertions. */
export const toRecord = (counts: ReadonlyMap<string, number>): Record<string, number> =>
  Object.fromEntries([...counts.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))

/**
 * Polls the read_committed output at `bootstrap` until it shows `expected` (or `timeoutMs` passes), then
 * returns what it last showed, for the test to assert on; rejects at once if the application exited.
 */
export const awaitCounts = async (
  app: WordCountHandle,
  bootstrap: string,
  outputTopic: string,
  expected: ReadonlyMap<string, number>,
  timeoutMs = 90_000
): Promise<Record<string, number>> => {
  const want = JSON.stringify(toRecord(expected))
  let last: Record<string, number> = {}
  let exited: Error | undefined
  await Wait.eventually(
    "the word counts",
    async () => {
      if (!app.isAlive()) {
        exited = new Error(`the Streams application exited:\n${app.output()}`)
        return true
      }
      last = toRecord(await readCounts(bootstrap, outputTopic))
      return JSON.stringify(last) === want ? true : undefined
    },
    timeoutMs,
    500
  ).catch(() => undefined)
  if (exited !== undefined) throw exited
  return last
}

/** The application's arguments after the main class. */
export const programArgs = (o: WordCountOptions): Array<string> => [
  o.bootstrap,
  o.applicationId,
  o.inputTopic,
  o.outputTopic,
  o.stateDir,
  String(o.commitIntervalMs ?? 200),
  String(o.replicationFactor ?? 3),
  ...Object.entries(o.properties ?? {}).map(([k, v]) => `${k}=${String(v)}`)
]

/** Starts the application and resolves once it is RUNNING; rejects (and kills it) if it exits or times out first. */
export const startWordCount = async (opts: WordCountOptions): Promise<WordCountHandle> => {
  const libs = opts.libs ?? (await KafkaPeer.streamsLibs(opts.version))
  const java = await JavaClasses.javaArgs(libs, MAIN_CLASS, { sources: JavaClasses.streamsSourceDir, heap: "256m" })
  const states: State[] = []
  const stateWaiters = new Set<() => void>()
  let closed = false
  const output = new Process.OutputTail(OUTPUT_TAIL_CHARS, (line) => {
    const m = /^state (\S+) (\S+)$/.exec(line.trim())
    if (m !== null && isState(m[2]!)) states.push(m[2])
    if (line.trim() === "closed") closed = true
    for (const w of [...stateWaiters]) w()
  })
  const child: ChildProcess = spawn("java", [...java, ...programArgs(opts)], { stdio: ["pipe", "pipe", "pipe"] })
  Process.track(child)
  output.attach(child)
  child.stdin?.on("error", () => {})

  const awaitState = (state: State, timeoutMs = DEFAULT_START_TIMEOUT_MS): Promise<void> =>
    new Promise((resolve, reject) => {
      const finish = (error?: Error) => {
        clearTimeout(timer)
        stateWaiters.delete(check)
        child.off("exit", onExit)
        if (error === undefined) resolve()
        else reject(error)
      }
      const failure = (why: string) =>
        new PeerStartError({
          peer: "kafka streams",
          output: output.toString(),
          message: `the Streams application ${why} before reaching ${state} (states: ${states.join(" → ")}); output:\n${output.toString()}`
        })
      const check = () => {
        if (states.includes(state)) finish()
        else if (states.includes("ERROR") || states.includes("PENDING_ERROR")) finish(failure("failed"))
      }
      const onExit = () => finish(failure(`exited (code ${child.exitCode}, signal ${child.signalCode})`))
      const timer = setTimeout(() => finish(failure(`took ${timeoutMs} ms`)), timeoutMs)
      stateWaiters.add(check)
      check()
      if (Process.hasExited(child)) onExit()
      else child.once("exit", onExit)
    })

  try {
    await awaitState("RUNNING", opts.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS)
  } catch (e) {
    child.kill("SIGKILL")
    await Process.waitForExit(child, 10_000)
    throw e
  }

  return {
    pid: child.pid ?? -1,
    states: () => [...states],
    awaitState,
    close: async () => {
      if (!Process.hasExited(child)) child.stdin?.end("close\n")
      const exit = await Process.waitForExit(child, CLOSE_TIMEOUT_MS)
      if (exit === undefined || exit.code !== 0 || !closed) {
        child.kill("SIGKILL")
        await Process.waitForExit(child, 10_000)
        throw new PeerStopError({
          peer: "kafka streams",
          output: output.toString(),
          message: `the Streams application did not close cleanly (${exit === undefined ? "still running" : `exit ${exit.code ?? exit.signal}`}); output:\n${output.toString()}`
        })
      }
      return exit
    },
    kill: async () => {
      if (!Process.hasExited(child)) child.kill("SIGKILL")
      await Process.waitForExit(child, 10_000)
    },
    isAlive: () => !Process.hasExited(child),
    output: () => output.toString()
  }
}
