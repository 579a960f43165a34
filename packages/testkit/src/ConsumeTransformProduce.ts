/**
 * A consume-transform-produce peer on Kafka's own Java clients (`java/ConsumeTransformProduce.java`): a
 * read_committed consumer in a group reads an input topic, and a transactional producer writes
 * `<value>-out` for every input record to the same partition of an output topic, committing the
 * consumer's offsets in each transaction with `sendOffsetsToTransaction(offsets, groupMetadata())`.
 *
 * Transactions are cut per partition, `chunk` input records each, and every `abortEvery`-th transaction of
 * a partition is aborted on purpose and redone, so the same input gives the same transactions on every
 * cluster. `run` resolves once every input record is in a committed transaction. It owns only its JVM.
 */
import * as KafkaPeer from "./KafkaPeer.js"
import * as JavaClasses from "./internal/JavaClasses.js"
import * as Process from "./internal/Process.js"
import { ToolError } from "./TestkitError.js"

export const MAIN_CLASS = "ConsumeTransformProduce"

export interface RunOptions {
  readonly bootstrap: string
  readonly input: string
  readonly output: string
  readonly partitions: number
  readonly groupId: string
  readonly transactionalId: string
  /** Input records per transaction (fewer at a partition's end). */
  readonly chunk: number
  /** Every `abortEvery`-th transaction of a partition is aborted and redone; 0: none. */
  readonly abortEvery: number
  /** How long the whole run may take (default 120 s). */
  readonly timeoutMs?: number
  readonly libs?: string
  readonly version?: string
}

export interface Transaction {
  readonly partition: number
  readonly outcome: "committed" | "aborted"
  readonly records: number
}

export interface Result {
  /** In the order they ended. */
  readonly transactions: ReadonlyArray<Transaction>
  readonly commits: number
  readonly aborts: number
}

const DEFAULT_TIMEOUT_MS = 120_000

/** Parses the peer's `committed|aborted <partition> <records>` and `done <commits> <aborts>` lines. */
export const parse = (stdout: string): Result | undefined => {
  const transactions: Transaction[] = []
  let done: { commits: number; aborts: number } | undefined
  for (const line of stdout.split("\n")) {
    const t = /^(committed|aborted) (\d+) (\d+)$/.exec(line.trim())
    if (t !== null) {
      transactions.push({
        outcome: t[1] === "committed" ? "committed" : "aborted",
        partition: Number(t[2]),
        records: Number(t[3])
      })
      continue
    }
    const d = /^done (\d+) (\d+)$/.exec(line.trim())
    if (d !== null) done = { commits: Number(d[1]), aborts: Number(d[2]) }
  }
  return done === undefined ? undefined : { transactions, ...done }
}

/** Runs the loop to the end of its input; rejects with a `ToolError` (quoting its stderr) if it fails or times out. */
export const run = async (opts: RunOptions): Promise<Result> => {
  if (!Number.isInteger(opts.chunk) || opts.chunk <= 0) throw new RangeError("chunk must be a positive integer")
  if (!Number.isInteger(opts.abortEvery) || opts.abortEvery < 0 || opts.abortEvery === 1)
    throw new RangeError("abortEvery must be 0 or at least 2 (every transaction aborted never ends)")
  const libs = opts.libs ?? (await KafkaPeer.libs(opts.version))
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS
  const r = await Process.run(
    "java",
    [
      ...(await JavaClasses.javaArgs(libs, MAIN_CLASS)),
      opts.bootstrap,
      opts.input,
      opts.output,
      String(opts.partitions),
      opts.groupId,
      opts.transactionalId,
      String(opts.chunk),
      String(opts.abortEvery),
      String(timeoutMs)
    ],
    // The loop stops itself at its deadline; the kill is for a JVM that hangs beyond it.
    { timeoutMs: timeoutMs + 30_000 }
  )
  const result = r.code === 0 ? parse(r.stdout) : undefined
  if (result === undefined)
    throw new ToolError({
      tool: "consume-transform-produce",
      code: r.code,
      timedOut: r.timedOut,
      stderr: r.stderr,
      message: `consume-transform-produce from ${opts.input} ${r.timedOut ? "timed out" : `exited with ${r.code ?? r.signal}`}:\n${r.stdout.slice(-2_000)}\n${r.stderr.slice(-4_000)}`
    })
  return result
}
