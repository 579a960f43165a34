/**
 * What a coordinator decide function returns: the `__mirror_state` records to append and the response
 * to send once they are committed (Kafka's `CoordinatorResult`). Owns only the shape; applying records
 * is `replay`'s job.
 */
import type { MirrorStateRecords } from "@clustermirror/protocol"

export interface CoordinatorResult<R> {
  readonly records: ReadonlyArray<MirrorStateRecords.MirrorStateRecord>
  readonly response: R
}

/** A result with records and a response. */
export const of = <R>(
  records: ReadonlyArray<MirrorStateRecords.MirrorStateRecord>,
  response: R
): CoordinatorResult<R> => ({ records, response })

/** A result that writes nothing. */
export const response = <R>(response: R): CoordinatorResult<R> => ({ records: [], response })
