/**
 * A transactional (or idempotent) producer peer: `java/TransactionalProducer.java`, run on Kafka's own Java
 * client, produces a plan of transactions (commit N, abort N, leave N open) to one topic. `start` resolves
 * once the plan reached its end, or its last transaction is open with every record acknowledged; the open
 * transaction is then committed, aborted or left open (the process killed) by the test.
 *
 * Record `i` of step `s` goes to partition `i % partitions` with the value `<prefix>-<s>-<kind>-<i>`, so a
 * test knows which values each step wrote where (`values`); or, given `lines`, the plan's records take those
 * values in order (`linesOf` names the ones a step wrote). It owns only the JVM it started and the temp file
 * holding its lines.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as KafkaPeer from "./KafkaPeer.js"
import * as JavaClasses from "./internal/JavaClasses.js"
import * as Process from "./internal/Process.js"
import { PeerStartError } from "./TestkitError.js"

export const MAIN_CLASS = "TransactionalProducer"

export type Compression = "none" | "gzip" | "snappy" | "lz4" | "zstd"

/**
 * A transaction of `records` records, committed, aborted or left open (open only as the last step); for an
 * idempotent producer without transactions, `send`: the records are sent and acknowledged.
 */
export interface Step {
  readonly kind: "commit" | "abort" | "open" | "send"
  readonly records: number
}

export interface ProducerOptions {
  readonly bootstrap: string
  readonly topic: string
  readonly partitions: number
  /** `null`: an idempotent producer without transactions, which sends each step's records and waits for them. */
  readonly transactionalId: string | null
  readonly compression: Compression
  /** The first part of every value. */
  readonly prefix: string
  readonly plan: ReadonlyArray<Step>
  /**
   * The records' values instead of generated ones: the plan's records take them in order (at least one per
   * record, none holding a line break); `prefix` is then unused.
   */
  readonly lines?: ReadonlyArray<string>
  /** A libs folder instead of resolving `version`. */
  readonly libs?: string
  readonly version?: string
  /** How long the plan may take up to its open transaction or its end (default 120 s). */
  readonly timeoutMs?: number
}

export interface ProducerHandle {
  readonly pid: number
  /** Commits the open transaction and waits for the producer to exit. */
  commit(): Promise<void>
  /** Aborts the open transaction and waits for the producer to exit. */
  abort(): Promise<void>
  /** SIGKILLs the JVM (an open transaction stays open on the broker until it times out). */
  stop(): Promise<void>
  isAlive(): boolean
  /** The recent stdout+stderr of the JVM. */
  output(): string
}

const DEFAULT_TIMEOUT_MS = 120_000
const OUTPUT_TAIL_CHARS = 64 * 1024

/** The values step `step` of a plan wrote, per partition, in the order they were sent. */
export const values = (
  prefix: string,
  partitions: number,
  plan: ReadonlyArray<Step>,
  step: number
): ReadonlyArray<ReadonlyArray<string>> => {
  const s = plan[step]
  const out: string[][] = Array.from({ length: partitions }, () => [])
  if (s === undefined) return out
  for (let i = 0; i < s.records; i++) out[i % partitions]!.push(`${prefix}-${step}-${s.kind}-${i}`)
  return out
}

/** Whether a step's records become visible to read_committed readers (committed or not transactional). */
export const isCommitted = (s: Step): boolean => s.kind === "commit" || s.kind === "send"

/** The values of the steps of `plan` that `pick` takes, per partition, in the order they were sent. */
export const valuesOf = (
  prefix: string,
  partitions: number,
  plan: ReadonlyArray<Step>,
  pick: (s: Step) => boolean = () => true
): string[][] => {
  const out: string[][] = Array.from({ length: partitions }, () => [])
  plan.forEach((s, i) => {
    if (!pick(s)) return
    values(prefix, partitions, plan, i).forEach((vs, p) => {
      out[p]!.push(...vs)
    })
  })
  return out
}

/** Per-partition value lists joined, each partition's sorted (for comparing with what readers saw). */
export const mergeSorted = (
  partitions: number,
  ...parts: ReadonlyArray<ReadonlyArray<ReadonlyArray<string>>>
): string[][] => Array.from({ length: partitions }, (_, p) => parts.flatMap((x) => x[p] ?? []).sort())

/**
 * The lines of `lines` that the steps of `plan` which `pick` takes wrote, in the order they were sent, when
 * the plan's records took `lines` in order (the `lines` option).
 */
export const linesOf = (
  plan: ReadonlyArray<Step>,
  lines: ReadonlyArray<string>,
  pick: (s: Step) => boolean = () => true
): string[] => {
  const out: string[] = []
  let taken = 0
  for (const s of plan) {
    if (pick(s)) out.push(...lines.slice(taken, taken + s.records))
    taken += s.records
  }
  return out
}

/** Checks that `lines` can be the values of `plan`'s records: one per record, each on one line. */
export const checkLines = (plan: ReadonlyArray<Step>, lines: ReadonlyArray<string>): void => {
  const records = plan.reduce((n, s) => n + s.records, 0)
  if (lines.length < records) throw new RangeError(`${lines.length} lines for a plan of ${records} records`)
  const broken = lines.findIndex((l) => /[\r\n]/.test(l))
  if (broken >= 0) throw new RangeError(`line ${broken} holds a line break`)
}

/** The plan as the Java program's argument: `commit:10,abort:5,open:3`. */
export const planArgument = (plan: ReadonlyArray<Step>, transactional: boolean): string => {
  plan.forEach((s, i) => {
    if ((s.kind === "send") === transactional)
      throw new RangeError(
        `step ${i}: ${transactional ? "a transactional producer commits, aborts or leaves open" : "an idempotent producer only sends"}`
      )
    if (!Number.isInteger(s.records) || s.records <= 0)
      throw new RangeError(`step ${i}: a transaction needs at least one record`)
    if (s.kind === "open" && i !== plan.length - 1) throw new RangeError(`step ${i}: only the last step may stay open`)
  })
  return plan.map((s) => `${s.kind}:${s.records}`).join(",")
}

/** Starts the producer and resolves once it printed `done` or `open <n>`; rejects if it exits or times out first. */
export const start = async (opts: ProducerOptions): Promise<ProducerHandle> => {
  const plan = planArgument(opts.plan, opts.transactionalId !== null)
  if (opts.lines !== undefined) checkLines(opts.plan, opts.lines)
  const libs = opts.libs ?? (await KafkaPeer.libs(opts.version))
  const args = await JavaClasses.javaArgs(libs, MAIN_CLASS)
  const linesDir = opts.lines === undefined ? undefined : mkdtempSync(join(tmpdir(), "cm-txn-producer-"))
  const linesFile = linesDir === undefined ? [] : [join(linesDir, "values.txt")]
  if (opts.lines !== undefined) writeFileSync(linesFile[0]!, `${opts.lines.join("\n")}\n`, "utf8")
  const lineWaiters: Array<(line: string) => void> = []
  const output = new Process.OutputTail(OUTPUT_TAIL_CHARS, (line) => {
    for (const w of [...lineWaiters]) w(line)
  })
  const child: ChildProcess = spawn(
    "java",
    [
      ...args,
      opts.bootstrap,
      opts.topic,
      String(opts.partitions),
      opts.transactionalId ?? "-",
      opts.compression,
      opts.prefix,
      plan,
      ...linesFile
    ],
    { stdio: ["pipe", "pipe", "pipe"] }
  )
  Process.track(child)
  if (linesDir !== undefined) child.once("exit", () => rmSync(linesDir, { recursive: true, force: true }))
  output.attach(child)
  child.stdin?.on("error", () => {})

  /** Resolves on the first line `accept` takes; rejects if the JVM exits first or `timeoutMs` passes. */
  const awaitLine = (what: string, accept: (line: string) => boolean, timeoutMs: number): Promise<void> =>
    new Promise((resolve, reject) => {
      const done = (error?: Error) => {
        clearTimeout(timer)
        lineWaiters.splice(lineWaiters.indexOf(onLine), 1)
        child.off("exit", onExit)
        if (error === undefined) resolve()
        else reject(error)
      }
      const failure = (why: string) =>
        new PeerStartError({
          peer: "transactional producer",
          output: output.toString(),
          message: `transactional producer ${why} before ${what}; output:\n${output.toString()}`
        })
      const onLine = (line: string) => {
        if (accept(line.trim())) done()
      }
      const onExit = () => done(failure(`exited (code ${child.exitCode}, signal ${child.signalCode})`))
      const timer = setTimeout(() => {
        child.kill("SIGKILL")
        done(failure(`ran ${timeoutMs} ms`))
      }, timeoutMs)
      lineWaiters.push(onLine)
      if (Process.hasExited(child)) onExit()
      else child.once("exit", onExit)
    })

  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS
  const last = opts.plan[opts.plan.length - 1]
  const finished = (line: string) => line === "done" || (last?.kind === "open" && line.startsWith("open "))
  try {
    await awaitLine("the end of its plan", finished, timeoutMs)
  } catch (e) {
    child.kill("SIGKILL")
    await Process.waitForExit(child, 10_000)
    throw e
  }

  const end = async (command: "commit" | "abort"): Promise<void> => {
    const ended = awaitLine(`${command}ting`, (line) => line === "done", timeoutMs)
    child.stdin?.write(`${command}\n`)
    await ended
    await Process.waitForExit(child, timeoutMs)
  }

  return {
    pid: child.pid ?? -1,
    commit: () => end("commit"),
    abort: () => end("abort"),
    stop: async () => {
      if (!Process.hasExited(child)) child.kill("SIGKILL")
      await Process.waitForExit(child, 10_000)
    },
    isAlive: () => !Process.hasExited(child),
    output: () => output.toString()
  }
}
