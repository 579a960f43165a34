/**
 * What a coordinator decision returns: the records to append to the coordinator log and the response to
 * send once they are committed (Kafka's `CoordinatorResult`). Owns only the shape; applying records is
 * the shard's `replay`.
 */

export interface CoordinatorResult<R, A> {
  readonly records: ReadonlyArray<R>
  readonly response: A
}

/** A result with records and a response. */
export const of = <R, A>(records: ReadonlyArray<R>, response: A): CoordinatorResult<R, A> => ({ records, response })

/** A result that writes nothing. */
export const response = <A>(response: A): CoordinatorResult<never, A> => ({ records: [], response })
