/**
 * DeleteRecords (key 21) on the partitions this broker leads: the wire request in, `ReplicaManager.deleteRecords`
 * per partition, the wire response out once every partition has answered (its low watermark reached by the
 * in-sync replicas, or an error). Authorization is the request path's (`@clustermirror/security`); whether a
 * mirror topic may be changed is the caller's `refusal`.
 */
import { type DeleteRecords, Errors } from "@clustermirror/protocol"
import type { ReplicaManager } from "./ReplicaManager.js"

export interface Options {
  /** Whether the metadata has the partition: one not hosted here answers NOT_LEADER_OR_FOLLOWER, else UNKNOWN_TOPIC_OR_PARTITION. */
  readonly known: (topic: string, partition: number) => boolean
  /** An error code refusing the deletion on a partition led here (READ_ONLY_TOPIC for a mirror topic), else 0. */
  readonly refusal: (topic: string, partition: number) => number
}

/** Answers a DeleteRecords request; waits at most the request's TimeoutMs per partition. */
export const handle = (
  replicas: ReplicaManager,
  request: DeleteRecords.Request,
  options: Options
): Promise<DeleteRecords.Response> =>
  // not a fan-out: the partitions are local and wait on their own followers
  Promise.all(
    request.topics.map(async (t) => ({
      name: t.name,
      partitions: await Promise.all(
        t.partitions.map(async (p) => {
          const r =
            replicas.get(t.name, p.partitionIndex) === undefined && options.known(t.name, p.partitionIndex)
              ? { errorCode: Errors.ErrorCode.NOT_LEADER_OR_FOLLOWER, lowWatermark: -1n }
              : await replicas.deleteRecords(t.name, p.partitionIndex, Number(p.offset), request.timeoutMs, () =>
                  options.refusal(t.name, p.partitionIndex)
                )
          return { partitionIndex: p.partitionIndex, lowWatermark: r.lowWatermark, errorCode: r.errorCode }
        })
      )
    }))
  ).then((topics) => ({ throttleTimeMs: 0, topics }))
