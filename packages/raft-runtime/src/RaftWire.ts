/**
 * The raft core's messages on Kafka's wire: Vote (52) v2, BeginQuorumEpoch (53) v1, EndQuorumEpoch
 * (54) v1, Fetch (1) v17 and FetchSnapshot (59) v1, one field to one field, for the one partition
 * `__cluster_metadata-0`. Fetch records travel as record batches; the records decoded from a fetched
 * response remember their batches (`fetchedBatches`), so a follower appends the leader's bytes
 * unchanged. FetchSnapshot carries a chunk of the snapshot file: the core's messages hold no bytes, so
 * the chunk of a response (`snapshotChunk`) and the `MaxBytes` of a request (`snapshotMaxBytes`)
 * travel beside them, and a response's `Size` and `Position` are the file's bytes on the wire. Pure:
 * no I/O, no decisions.
 */
import { MetadataLog } from "@clustermirror/metadata-log"
import {
  type BeginQuorumEpoch,
  type EndQuorumEpoch,
  type Fetch,
  type FetchSnapshot,
  type Spec,
  type Vote,
  ZERO_UUID
} from "@clustermirror/protocol"
import type { RaftMessages } from "@clustermirror/raft"
import { Either } from "effect"
import { Buffer } from "node:buffer"
import * as RaftLogStore from "./RaftLogStore.js"

export const VERSIONS = { vote: 2, beginQuorumEpoch: 1, endQuorumEpoch: 1, fetch: 17, fetchSnapshot: 1 } as const

const TOPIC = MetadataLog.METADATA_TOPIC
const TOPIC_ID = MetadataLog.METADATA_TOPIC_ID
const PARTITION = MetadataLog.METADATA_PARTITION

type Record = RaftLogStore.Record
export type Response = RaftMessages.RaftResponse<Buffer>

const batchesOf = new WeakMap<ReadonlyArray<Record>, Buffer>()

/** The batches the records of a fetched response were decoded from, if they were. */
export const fetchedBatches = (records: ReadonlyArray<Record>): Buffer | undefined => batchesOf.get(records)

const chunkOf = new WeakMap<RaftMessages.FetchSnapshotResponse<Buffer>, Buffer>()
const maxBytesOf = new WeakMap<RaftMessages.FetchSnapshotRequest, number>()

/** The snapshot bytes a FetchSnapshot response carries (from `Position` on), empty when none. */
export const snapshotChunk = (response: RaftMessages.FetchSnapshotResponse<Buffer>): Buffer =>
  chunkOf.get(response) ?? Buffer.alloc(0)

/** `response` carrying `chunk` of the snapshot file. */
export const withSnapshotChunk = (
  response: RaftMessages.FetchSnapshotResponse<Buffer>,
  chunk: Buffer
): RaftMessages.FetchSnapshotResponse<Buffer> => {
  chunkOf.set(response, chunk)
  return response
}

/** The most snapshot bytes a FetchSnapshot request asks for (`MaxBytes`). */
export const snapshotMaxBytes = (request: RaftMessages.FetchSnapshotRequest): number =>
  maxBytesOf.get(request) ?? 0x7fffffff

/** `request` asking for at most `maxBytes` of the snapshot. */
export const withSnapshotMaxBytes = (
  request: RaftMessages.FetchSnapshotRequest,
  maxBytes: number
): RaftMessages.FetchSnapshotRequest => {
  maxBytesOf.set(request, maxBytes)
  return request
}

/** Records decoded from batches, remembering them. */
export const recordsOf = (batches: Buffer): Either.Either<ReadonlyArray<Record>, string> =>
  Either.map(RaftLogStore.decodeBatches(batches), (records) => {
    batchesOf.set(records, batches)
    return records
  })

const toBuffer = (records: Spec.RecordsData | null): Buffer =>
  records === null
    ? Buffer.alloc(0)
    : records instanceof Uint8Array
      ? Buffer.from(records.buffer, records.byteOffset, records.byteLength)
      : Buffer.concat(records.map((r) => Buffer.from(r.buffer, r.byteOffset, r.byteLength)))

const n = (v: bigint): number => Number(v)

/** The `topics` of a raft request or response: the one metadata partition, `__cluster_metadata-0`. */
const metadataPartition = <P>(partition: P) => [
  { topicName: TOPIC, partitions: [{ partitionIndex: PARTITION, ...partition }] }
]

// ------------------------------------------------------------------------------------------- requests

export const voteRequest = (r: RaftMessages.VoteRequest): Spec.StructInput<typeof Vote.Request.fields> => ({
  clusterId: r.clusterId,
  voterId: r.voterId,
  topics: metadataPartition({
    replicaEpoch: r.replicaEpoch,
    replicaId: r.replicaId,
    replicaDirectoryId: ZERO_UUID,
    voterDirectoryId: ZERO_UUID,
    lastOffsetEpoch: r.lastOffsetEpoch,
    lastOffset: BigInt(r.lastOffset),
    preVote: r.preVote
  })
})

export const beginQuorumEpochRequest = (
  r: RaftMessages.BeginQuorumEpochRequest
): Spec.StructInput<typeof BeginQuorumEpoch.Request.fields> => ({
  clusterId: r.clusterId,
  voterId: r.voterId,
  topics: metadataPartition({ voterDirectoryId: ZERO_UUID, leaderId: r.leaderId, leaderEpoch: r.leaderEpoch }),
  leaderEndpoints: []
})

export const endQuorumEpochRequest = (
  r: RaftMessages.EndQuorumEpochRequest
): Spec.StructInput<typeof EndQuorumEpoch.Request.fields> => ({
  clusterId: r.clusterId,
  topics: metadataPartition({
    leaderId: r.leaderId,
    leaderEpoch: r.leaderEpoch,
    preferredSuccessors: [],
    preferredCandidates: r.preferredCandidates.map((c) => ({
      candidateId: c.candidateId,
      candidateDirectoryId: ZERO_UUID
    }))
  }),
  leaderEndpoints: []
})

export const fetchRequest = (r: RaftMessages.FetchRequest): Spec.StructInput<typeof Fetch.Request.fields> => ({
  clusterId: r.clusterId,
  replicaState: { replicaId: r.replicaId, replicaEpoch: BigInt(r.replicaEpoch) },
  maxWaitMs: r.maxWaitMs,
  minBytes: 0,
  maxBytes: RaftLogStore.MAX_BATCH_BYTES,
  isolationLevel: 0,
  sessionId: 0,
  sessionEpoch: -1,
  topics: [
    {
      topicId: TOPIC_ID,
      partitions: [
        {
          partition: PARTITION,
          currentLeaderEpoch: r.currentLeaderEpoch,
          fetchOffset: BigInt(r.fetchOffset),
          lastFetchedEpoch: r.lastFetchedEpoch,
          logStartOffset: BigInt(r.logStartOffset),
          partitionMaxBytes: RaftLogStore.MAX_BATCH_BYTES
        }
      ]
    }
  ],
  forgottenTopicsData: [],
  rackId: ""
})

export const fetchSnapshotRequest = (
  r: RaftMessages.FetchSnapshotRequest
): Spec.StructInput<typeof FetchSnapshot.Request.fields> => ({
  clusterId: r.clusterId,
  replicaId: r.replicaId,
  maxBytes: snapshotMaxBytes(r),
  topics: [
    {
      name: TOPIC,
      partitions: [
        {
          partition: PARTITION,
          currentLeaderEpoch: r.currentLeaderEpoch,
          snapshotId: { endOffset: BigInt(r.snapshotId.endOffset), epoch: r.snapshotId.epoch },
          position: BigInt(r.position)
        }
      ]
    }
  ]
})

/** A decoded wire request as the core's message and its sender, or why it is not one for this quorum. */
export type Incoming = { readonly from: number; readonly request: RaftMessages.RaftRequest } | string

const onePartition = <P extends { readonly partitionIndex?: number; readonly partition?: number }>(
  topics: ReadonlyArray<{ readonly partitions: ReadonlyArray<P> }>,
  topicOk: (i: number) => boolean
): P | string => {
  const t = topics[0]
  if (topics.length !== 1 || t === undefined || !topicOk(0)) return `not a request for ${TOPIC} alone`
  const p = t.partitions[0]
  if (t.partitions.length !== 1 || p === undefined || (p.partitionIndex ?? p.partition) !== PARTITION)
    return `not a request for ${TOPIC}-${PARTITION} alone`
  return p
}

export const fromVoteRequest = (w: Vote.Request): Incoming => {
  const p = onePartition(w.topics, (i) => w.topics[i]?.topicName === TOPIC)
  if (typeof p === "string") return p
  return {
    from: p.replicaId,
    request: {
      _tag: "VoteRequest",
      clusterId: w.clusterId ?? "",
      voterId: w.voterId,
      replicaEpoch: p.replicaEpoch,
      replicaId: p.replicaId,
      lastOffsetEpoch: p.lastOffsetEpoch,
      lastOffset: n(p.lastOffset),
      preVote: p.preVote
    }
  }
}

export const fromBeginQuorumEpochRequest = (w: BeginQuorumEpoch.Request): Incoming => {
  const p = onePartition(w.topics, (i) => w.topics[i]?.topicName === TOPIC)
  if (typeof p === "string") return p
  return {
    from: p.leaderId,
    request: {
      _tag: "BeginQuorumEpochRequest",
      clusterId: w.clusterId ?? "",
      voterId: w.voterId,
      leaderId: p.leaderId,
      leaderEpoch: p.leaderEpoch
    }
  }
}

export const fromEndQuorumEpochRequest = (w: EndQuorumEpoch.Request): Incoming => {
  const p = onePartition(w.topics, (i) => w.topics[i]?.topicName === TOPIC)
  if (typeof p === "string") return p
  return {
    from: p.leaderId,
    request: {
      _tag: "EndQuorumEpochRequest",
      clusterId: w.clusterId ?? "",
      leaderId: p.leaderId,
      leaderEpoch: p.leaderEpoch,
      preferredCandidates: p.preferredCandidates.map((c) => ({ candidateId: c.candidateId }))
    }
  }
}

/** Whether a Fetch is for the metadata partition (a quorum fetch, or a broker following the log). */
export const isMetadataFetch = (w: Fetch.Request): boolean =>
  w.topics.length === 1 && (w.topics[0]?.topicId === TOPIC_ID || w.topics[0]?.topic === TOPIC)

export const fromFetchRequest = (w: Fetch.Request): Incoming => {
  const p = onePartition(w.topics, (i) => w.topics[i]?.topicId === TOPIC_ID || w.topics[i]?.topic === TOPIC)
  if (typeof p === "string") return p
  const replicaId = w.replicaState.replicaId >= 0 ? w.replicaState.replicaId : w.replicaId
  return {
    from: replicaId,
    request: {
      _tag: "FetchRequest",
      clusterId: w.clusterId ?? "",
      replicaId,
      replicaEpoch: n(w.replicaState.replicaEpoch),
      maxWaitMs: w.maxWaitMs,
      currentLeaderEpoch: p.currentLeaderEpoch,
      fetchOffset: n(p.fetchOffset),
      lastFetchedEpoch: p.lastFetchedEpoch,
      logStartOffset: n(p.logStartOffset)
    }
  }
}

export const fromFetchSnapshotRequest = (w: FetchSnapshot.Request): Incoming => {
  const p = onePartition(w.topics, (i) => w.topics[i]?.name === TOPIC)
  if (typeof p === "string") return p
  const request: RaftMessages.FetchSnapshotRequest = {
    _tag: "FetchSnapshotRequest",
    clusterId: w.clusterId ?? "",
    replicaId: w.replicaId,
    currentLeaderEpoch: p.currentLeaderEpoch,
    snapshotId: { endOffset: n(p.snapshotId.endOffset), epoch: p.snapshotId.epoch },
    position: n(p.position)
  }
  return { from: w.replicaId, request: withSnapshotMaxBytes(request, w.maxBytes) }
}

// ------------------------------------------------------------------------------------------ responses

export const voteResponse = (r: RaftMessages.VoteResponse): Spec.StructInput<typeof Vote.Response.fields> => ({
  errorCode: 0,
  topics: metadataPartition({
    errorCode: r.errorCode,
    leaderId: r.leaderId,
    leaderEpoch: r.leaderEpoch,
    voteGranted: r.voteGranted
  }),
  nodeEndpoints: []
})

export const beginQuorumEpochResponse = (
  r: RaftMessages.BeginQuorumEpochResponse
): Spec.StructInput<typeof BeginQuorumEpoch.Response.fields> => ({
  errorCode: 0,
  topics: metadataPartition({ errorCode: r.errorCode, leaderId: r.leaderId, leaderEpoch: r.leaderEpoch }),
  nodeEndpoints: []
})

export const endQuorumEpochResponse = (
  r: RaftMessages.EndQuorumEpochResponse
): Spec.StructInput<typeof EndQuorumEpoch.Response.fields> => ({
  errorCode: 0,
  topics: metadataPartition({ errorCode: r.errorCode, leaderId: r.leaderId, leaderEpoch: r.leaderEpoch }),
  nodeEndpoints: []
})

/** A Fetch response carrying `batches` (the log's bytes for the response's records). */
export const fetchResponse = (
  r: RaftMessages.FetchResponse<Buffer>,
  batches: Buffer
): Spec.StructInput<typeof Fetch.Response.fields> => ({
  throttleTimeMs: 0,
  errorCode: 0,
  sessionId: 0,
  responses: [
    {
      topicId: TOPIC_ID,
      partitions: [
        {
          errorCode: r.errorCode,
          highWatermark: BigInt(r.highWatermark),
          lastStableOffset: BigInt(r.highWatermark),
          logStartOffset: BigInt(r.logStartOffset),
          divergingEpoch:
            r.divergingEpoch === null
              ? { epoch: -1, endOffset: -1n }
              : { epoch: r.divergingEpoch.epoch, endOffset: BigInt(r.divergingEpoch.endOffset) },
          currentLeader: r.currentLeader,
          snapshotId:
            r.snapshotId === null
              ? { endOffset: -1n, epoch: -1 }
              : { endOffset: BigInt(r.snapshotId.endOffset), epoch: r.snapshotId.epoch },
          abortedTransactions: [],
          preferredReadReplica: -1,
          records: batches
        }
      ]
    }
  ],
  nodeEndpoints: []
})

/** A FetchSnapshot response with its chunk of the snapshot file (`snapshotChunk`). */
export const fetchSnapshotResponse = (
  r: RaftMessages.FetchSnapshotResponse<Buffer>
): Spec.StructInput<typeof FetchSnapshot.Response.fields> => ({
  throttleTimeMs: 0,
  errorCode: 0,
  topics: [
    {
      name: TOPIC,
      partitions: [
        {
          index: PARTITION,
          errorCode: r.errorCode,
          snapshotId: { endOffset: BigInt(r.snapshotId.endOffset), epoch: r.snapshotId.epoch },
          currentLeader: r.currentLeader,
          size: BigInt(r.size),
          position: BigInt(r.position),
          unalignedRecords: snapshotChunk(r)
        }
      ]
    }
  ],
  nodeEndpoints: []
})

const firstPartition = <P>(topics: ReadonlyArray<{ readonly partitions: ReadonlyArray<P> }>): P | string => {
  const p = topics[0]?.partitions[0]
  return p === undefined ? `a response without ${TOPIC}-${PARTITION}` : p
}

/** The core's response from a wire response whose top-level error code is set: the partition never came. */
const topLevel = (errorCode: number) => `top-level error code ${errorCode}`

export const fromVoteResponse = (w: Vote.Response): RaftMessages.VoteResponse | string => {
  if (w.errorCode !== 0) return topLevel(w.errorCode)
  const p = firstPartition(w.topics)
  if (typeof p === "string") return p
  return {
    _tag: "VoteResponse",
    errorCode: p.errorCode,
    leaderId: p.leaderId,
    leaderEpoch: p.leaderEpoch,
    voteGranted: p.voteGranted
  }
}

export const fromBeginQuorumEpochResponse = (
  w: BeginQuorumEpoch.Response
): RaftMessages.BeginQuorumEpochResponse | string => {
  if (w.errorCode !== 0) return topLevel(w.errorCode)
  const p = firstPartition(w.topics)
  if (typeof p === "string") return p
  return { _tag: "BeginQuorumEpochResponse", errorCode: p.errorCode, leaderId: p.leaderId, leaderEpoch: p.leaderEpoch }
}

export const fromEndQuorumEpochResponse = (
  w: EndQuorumEpoch.Response
): RaftMessages.EndQuorumEpochResponse | string => {
  if (w.errorCode !== 0) return topLevel(w.errorCode)
  const p = firstPartition(w.topics)
  if (typeof p === "string") return p
  return { _tag: "EndQuorumEpochResponse", errorCode: p.errorCode, leaderId: p.leaderId, leaderEpoch: p.leaderEpoch }
}

export const fromFetchResponse = (w: Fetch.Response): RaftMessages.FetchResponse<Buffer> | string => {
  if (w.errorCode !== 0) return topLevel(w.errorCode)
  const p = firstPartition(w.responses)
  if (typeof p === "string") return p
  const records = recordsOf(toBuffer(p.records))
  if (Either.isLeft(records)) return `records: ${records.left}`
  return {
    _tag: "FetchResponse",
    errorCode: p.errorCode,
    highWatermark: n(p.highWatermark),
    logStartOffset: n(p.logStartOffset),
    divergingEpoch:
      p.divergingEpoch.epoch < 0 && p.divergingEpoch.endOffset < 0n
        ? null
        : { epoch: p.divergingEpoch.epoch, endOffset: n(p.divergingEpoch.endOffset) },
    currentLeader: { leaderId: p.currentLeader.leaderId, leaderEpoch: p.currentLeader.leaderEpoch },
    snapshotId:
      p.snapshotId.endOffset < 0n ? null : { endOffset: n(p.snapshotId.endOffset), epoch: p.snapshotId.epoch },
    records: records.right
  }
}

export const fromFetchSnapshotResponse = (
  w: FetchSnapshot.Response
): RaftMessages.FetchSnapshotResponse<Buffer> | string => {
  if (w.errorCode !== 0) return topLevel(w.errorCode)
  const p = firstPartition(w.topics)
  if (typeof p === "string") return p
  return withSnapshotChunk(
    {
      _tag: "FetchSnapshotResponse",
      errorCode: p.errorCode,
      snapshotId: { endOffset: n(p.snapshotId.endOffset), epoch: p.snapshotId.epoch },
      currentLeader: { leaderId: p.currentLeader.leaderId, leaderEpoch: p.currentLeader.leaderEpoch },
      size: n(p.size),
      position: n(p.position),
      unalignedRecords: []
    },
    toBuffer(p.unalignedRecords)
  )
}
