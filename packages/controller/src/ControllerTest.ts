/**
 * The given/when/then harness for controller decisions, public so that every package testing
 * against the controller uses the same one:
 *
 *   given(records) → when((state, { nextOffset }) => decide(...)) → then(records, response)
 *
 * `given` replays records into an empty state; `when` runs a decide function on that state;
 * `then` asserts the exact records and response and replays the records the way the runtime does
 * (into a candidate state, each at its log offset), failing when replay dies. It returns the next
 * `Given`, so scenarios chain. Assertions throw `node:assert` errors, which every test runner reports.
 */
import type { MetadataRecords } from "@clustermirror/protocol"
import { Either } from "effect"
import assert from "node:assert/strict"
import type { ControllerResult } from "./ControllerResult.js"
import * as ControllerState from "./ControllerState.js"
import * as FeatureControl from "./FeatureControl.js"

/** What a decide function may return: a result, or a whole-request failure. */
export type Decision<R, E> = ControllerResult<R> | Either.Either<ControllerResult<R>, E>

export interface DecideContext {
  /** The offset the first record of the decision will get (e.g. the next broker epoch). */
  readonly nextOffset: bigint
}

export interface Given {
  readonly state: ControllerState.ControllerState
  /** The metadata log end offset: where the next record goes. */
  readonly nextOffset: bigint
  /** Runs a decide function on this state. */
  readonly when: <R, E = never>(
    decide: (state: ControllerState.ControllerState, ctx: DecideContext) => Decision<R, E>
  ) => When<R, E>
  /** Replays more records, as if another decision had written them. */
  readonly and: (records: ReadonlyArray<MetadataRecords.MetadataRecord>) => Given
}

export interface Outcome<R> {
  readonly records: ReadonlyArray<MetadataRecords.MetadataRecord>
  readonly response: R
  /** The state after replaying the records. */
  readonly after: Given
}

export interface When<R, E> {
  readonly result: Either.Either<ControllerResult<R>, E>
  /** Asserts exactly these records and this response, replays them and continues from there. */
  readonly then: (records: ReadonlyArray<MetadataRecords.MetadataRecord>, response: R) => Given
  /** Asserts success, replays the records and hands everything over for custom assertions. */
  readonly outcome: () => Outcome<R>
  /** Asserts a whole-request failure with this tag (and message, when given); state is unchanged. */
  readonly thenFails: (expected: { readonly _tag: string; readonly message?: string }) => Given
}

/**
 * Replays records as the runtime does, each at its offset from `firstOffset` on; an assertion error
 * names the record whose replay died.
 */
export const replayChecked = (
  state: ControllerState.ControllerState,
  records: ReadonlyArray<MetadataRecords.MetadataRecord>,
  firstOffset: bigint
): ControllerState.ControllerState => {
  let s = state
  records.forEach((record, i) => {
    const offset = firstOffset + BigInt(i)
    try {
      s = ControllerState.replay(s, record, offset)
    } catch (e) {
      assert.fail(
        `replay died on record ${i} (${record.type}) at offset ${offset}: ${e instanceof Error ? e.message : String(e)}`
      )
    }
  })
  return s
}

const makeGiven = (state: ControllerState.ControllerState, nextOffset: bigint): Given => ({
  state,
  nextOffset,
  when: <R, E>(decide: (state: ControllerState.ControllerState, ctx: DecideContext) => Decision<R, E>) => {
    const decision = decide(state, { nextOffset })
    const result: Either.Either<ControllerResult<R>, E> = Either.isEither(decision) ? decision : Either.right(decision)
    const success = (): ControllerResult<R> => {
      if (Either.isLeft(result)) assert.fail(`expected success, got failure ${describe(result.left)}`)
      return result.right
    }
    const outcome = (): Outcome<R> => {
      const { records, response } = success()
      const after = replayChecked(state, records, nextOffset)
      return { records, response, after: makeGiven(after, nextOffset + BigInt(records.length)) }
    }
    return {
      result,
      outcome,
      // biome-ignore lint/suspicious/noThenProperty: the harness speaks given/when/then; awaiting a When fails loudly below.
      then: (records, response) => {
        if (typeof records === "function")
          throw new Error(
            "a When is not a promise: finish it with then(records, response), outcome() or thenFails(...)"
          )
        const o = outcome()
        assert.deepStrictEqual(o.records, records, "records")
        assert.deepStrictEqual(o.response, response, "response")
        return o.after
      },
      thenFails: (expected) => {
        if (Either.isRight(result))
          assert.fail(`expected failure ${expected._tag}, got success with ${result.right.records.length} record(s)`)
        const actual = result.left
        assert.ok(
          actual !== null && typeof actual === "object" && "_tag" in actual,
          `not a tagged error: ${describe(actual)}`
        )
        assert.equal(actual._tag, expected._tag, "error tag")
        if (expected.message !== undefined)
          assert.equal("message" in actual ? actual.message : undefined, expected.message, "error message")
        return makeGiven(state, nextOffset)
      }
    }
  },
  and: (records) => makeGiven(replayChecked(state, records, nextOffset), nextOffset + BigInt(records.length))
})

const describe = (e: unknown): string =>
  e !== null && typeof e === "object" && "_tag" in e
    ? `${String(e._tag)}: ${"message" in e ? String(e.message) : ""}`
    : String(e)

/** A state made of these records, written from offset 0 on. */
export const given = (records: ReadonlyArray<MetadataRecords.MetadataRecord> = []): Given =>
  makeGiven(ControllerState.empty, 0n).and(records)

/** The feature records of a new cluster (latest metadata.version, mirroring on). */
export const bootstrap: ReadonlyArray<MetadataRecords.MetadataRecord> = Either.getOrThrow(
  FeatureControl.bootstrapRecords()
)
