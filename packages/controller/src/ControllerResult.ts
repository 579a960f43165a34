/**
 * What a decide function returns: the metadata records to append and the response to send once they
 * are committed (Kafka's `ControllerResult`). Owns only the shape and ways to combine results; it
 * never applies records (that is `replay`) and never touches state.
 */
import type { MetadataRecords } from "@clustermirror/protocol"

export interface ControllerResult<R> {
  readonly records: ReadonlyArray<MetadataRecords.MetadataRecord>
  readonly response: R
}

/** A result with records and a response. */
export const of = <R>(records: ReadonlyArray<MetadataRecords.MetadataRecord>, response: R): ControllerResult<R> => ({
  records,
  response
})

/** A result that changes nothing: validate-only requests, no-op decisions. */
export const response = <R>(response: R): ControllerResult<R> => ({ records: [], response })

/** The same records with a different response. */
export const map = <A, B>(result: ControllerResult<A>, f: (a: A) => B): ControllerResult<B> => ({
  records: result.records,
  response: f(result.response)
})

/**
 * Two decisions as one: records in order (first then second), responses combined. Use it only when
 * the second decision was taken on a state that already includes the first one's records.
 */
export const zipWith = <A, B, C>(
  first: ControllerResult<A>,
  second: ControllerResult<B>,
  f: (a: A, b: B) => C
): ControllerResult<C> => ({
  records: [...first.records, ...second.records],
  response: f(first.response, second.response)
})

/** Keeps the response and drops the records: what `validateOnly` answers. */
export const validateOnly = <R>(result: ControllerResult<R>): ControllerResult<R> => response(result.response)
