/** The pieces of a Fetch answer the in-memory leader and source endpoints build alike. */
import { Buffer } from "node:buffer"
import type { Fetch } from "@clustermirror/protocol"

export type ResponsePartition = Fetch.Response["responses"][number]["partitions"][number]

/** A partition answer with no data and every position unknown, for the endpoint to fill in. */
export const emptyPartition = (partitionIndex: number): ResponsePartition => ({
  partitionIndex,
  errorCode: 0,
  highWatermark: -1n,
  lastStableOffset: -1n,
  logStartOffset: -1n,
  divergingEpoch: { epoch: -1, endOffset: -1n },
  currentLeader: { leaderId: -1, leaderEpoch: -1 },
  snapshotId: { endOffset: -1n, epoch: -1 },
  abortedTransactions: null,
  preferredReadReplica: -1,
  records: Buffer.alloc(0),
  mirrorLeaderEpoch: -1
})
