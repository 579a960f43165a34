/**
 * RecoverMirrorTopics across the cluster: each partition is recovered by its leader, so the broker a client
 * asks recovers its own partitions and asks every other leader of the topics' partitions (one fan-out),
 * then answers one result per topic. A topic fails when any leader refused it; a leader that cannot be
 * reached fails every topic of the request (COORDINATOR_NOT_AVAILABLE, naming the broker).
 */
import { FanOut } from "@clustermirror/client"
import { Errors, type RecoverMirrorTopics } from "@clustermirror/protocol"
import { Effect, Either } from "effect"

/** One topic's outcome. */
export interface TopicResult {
  readonly topicName: string
  readonly errorCode: number
  readonly errorMessage: string | null
}

/** Time each other leader gets to answer. */
export const REQUEST_TIMEOUT_MS = 15_000

const E = Errors.ErrorCode
const messageOf = (e: unknown) => (e instanceof Error ? e.message : String(e))

/**
 * Merges this broker's own results with the other leaders' answers (in leader order): a leader's refusal
 * of a topic replaces a local success, a leader's failure fails every topic asked.
 */
export const merge = (
  topics: ReadonlyArray<string>,
  local: ReadonlyArray<TopicResult>,
  answers: ReadonlyArray<{
    readonly leader: number
    readonly result: Either.Either<ReadonlyArray<TopicResult>, unknown>
  }>
): RecoverMirrorTopics.Response => {
  const merged = new Map(local.map((r) => [r.topicName, r]))
  for (const { leader, result } of answers) {
    if (Either.isRight(result)) {
      for (const t of result.right)
        if (t.errorCode !== 0 && merged.get(t.topicName)?.errorCode === 0)
          merged.set(t.topicName, { topicName: t.topicName, errorCode: t.errorCode, errorMessage: t.errorMessage })
    } else
      for (const topicName of topics)
        merged.set(topicName, {
          topicName,
          errorCode: E.COORDINATOR_NOT_AVAILABLE,
          errorMessage: `broker ${leader}: ${messageOf(result.left)}`
        })
  }
  const out = topics.map((topicName) => {
    const r = merged.get(topicName)!
    return { topicName: r.topicName, errorCode: r.errorCode, errorMessage: r.errorMessage }
  })
  const first = out.find((t) => t.errorCode !== 0)
  return { throttleTimeMs: 0, errorCode: first?.errorCode ?? 0, errorMessage: first?.errorMessage ?? null, topics: out }
}

/**
 * Asks every leader in `leaders` (those `ask` knows a channel to) and merges their answers with `local`.
 * `ask` returns undefined for a leader this broker cannot reach by name (it is skipped).
 */
export const acrossLeaders = (
  topics: ReadonlyArray<string>,
  local: ReadonlyArray<TopicResult>,
  leaders: Iterable<number>,
  ask: (leader: number) => (() => Promise<RecoverMirrorTopics.Response>) | undefined
): Promise<RecoverMirrorTopics.Response> => {
  const known = [...leaders].flatMap((leader) => {
    const send = ask(leader)
    return send === undefined ? [] : [{ leader, send }]
  })
  return Effect.runPromise(
    FanOut.forEachBroker(
      known,
      ({ send }) => Effect.tryPromise({ try: send, catch: (e) => e }).pipe(Effect.map((res) => res.topics)),
      (outcomes) =>
        merge(
          topics,
          local,
          outcomes.map((o) => ({ leader: o.target.leader, result: o.result }))
        ),
      { timeoutMs: REQUEST_TIMEOUT_MS, describe: ({ leader }) => `broker ${leader}` }
    )
  )
}
