/**
 * What a `__mirror_state` decide function returns: the runtime's `CoordinatorResult` with the
 * coordinator's record type fixed (one shape for every coordinator, defined in the runtime).
 */
import { CoordinatorResult as Runtime } from "@clustermirror/coordinator-runtime"
import type { MirrorStateRecords } from "@clustermirror/protocol"

export type CoordinatorResult<R> = Runtime.CoordinatorResult<MirrorStateRecords.MirrorStateRecord, R>

/** A result with records and a response. */
export const of = <R>(
  records: ReadonlyArray<MirrorStateRecords.MirrorStateRecord>,
  response: R
): CoordinatorResult<R> => Runtime.of(records, response)

/** A result that writes nothing. */
export const response = <R>(response: R): CoordinatorResult<R> => Runtime.response(response)
