/**
 * A `LeaderEndpoint` over a connection to the leader broker. It needs only `request(api, version, body)`
 * (the client package's connection has that shape), so it does not depend on a particular client. Versions
 * are the ones negotiated with the leader (ApiVersions), passed in by whoever opened the connection. It
 * must not retry or reconnect: the fetcher backs off, the owner replaces the endpoint.
 */
import { Errors, Fetch, ListOffsets, OffsetForLeaderEpoch, type Api, type Spec } from "@clustermirror/protocol"
import { LeaderRequestError, UnsupportedFetchVersionError } from "./FetcherError.js"
import type { TopicPartition } from "./FetcherEvents.js"
import { type LeaderEndpoint, MIN_FETCH_VERSION, type OffsetAndEpoch } from "./LeaderEndpoint.js"

/** What the endpoint needs of a connection. */
export interface Connection {
  /** Sends one request and resolves with the decoded response body. */
  readonly request: <Req extends Spec.Fields, Res extends Spec.Fields>(
    api: Api.ApiDef<Req, Res>,
    version: number,
    body: Spec.StructInput<Req>
  ) => Promise<Spec.StructType<Res>>
  readonly close?: () => Promise<void>
}

export interface NetworkLeaderEndpointOptions {
  readonly leaderId: number
  /** This broker's id, sent as the replica id of ListOffsets and OffsetForLeaderEpoch. */
  readonly brokerId: number
  readonly connection: Connection
  /** Negotiated Fetch version (12+). */
  readonly fetchVersion: number
  /** Negotiated OffsetForLeaderEpoch version (default 4). */
  readonly offsetForLeaderEpochVersion?: number
  /** Negotiated ListOffsets version (default 7). */
  readonly listOffsetsVersion?: number
  /** ListOffsets timeout sent to the leader (ms, default 30000). */
  readonly requestTimeoutMs?: number
}

const EARLIEST = -2n
const LATEST = -1n

export const make = (options: NetworkLeaderEndpointOptions): LeaderEndpoint => {
  if (options.fetchVersion < MIN_FETCH_VERSION || options.fetchVersion > Fetch.api.maxVersion)
    throw new UnsupportedFetchVersionError({
      version: options.fetchVersion,
      message: `the replica fetcher needs Fetch v${MIN_FETCH_VERSION}..${Fetch.api.maxVersion}, got v${options.fetchVersion}`
    })
  const { connection } = options
  const send = async <Req extends Spec.Fields, Res extends Spec.Fields>(
    api: Api.ApiDef<Req, Res>,
    version: number,
    body: Spec.StructInput<Req>
  ): Promise<Spec.StructType<Res>> => {
    try {
      return await connection.request(api, version, body)
    } catch (cause) {
      throw new LeaderRequestError({
        api: api.name,
        message: cause instanceof Error ? cause.message : String(cause),
        cause
      })
    }
  }
  const listOffset = async (
    tp: TopicPartition,
    currentLeaderEpoch: number,
    timestamp: bigint
  ): Promise<OffsetAndEpoch> => {
    const response = await send(ListOffsets.api, options.listOffsetsVersion ?? 7, {
      // As a replica, the leader answers LATEST with its log end offset, not its high watermark.
      replicaId: options.brokerId,
      isolationLevel: 0,
      topics: [
        {
          name: tp.topic,
          partitions: [{ partitionIndex: tp.partition, currentLeaderEpoch, timestamp, maxNumOffsets: 1 }]
        }
      ],
      timeoutMs: options.requestTimeoutMs ?? 30_000
    })
    const answer = response.topics
      .find((t) => t.name === tp.topic)
      ?.partitions.find((p) => p.partitionIndex === tp.partition)
    if (answer === undefined)
      return { errorCode: Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, offset: -1, leaderEpoch: -1 }
    return { errorCode: answer.errorCode, offset: Number(answer.offset), leaderEpoch: answer.leaderEpoch }
  }
  return {
    leaderId: options.leaderId,
    fetchVersion: options.fetchVersion,
    fetch: (request, version = options.fetchVersion) => send(Fetch.api, version, request),
    offsetForLeaderEpoch: (request) =>
      send(OffsetForLeaderEpoch.api, options.offsetForLeaderEpochVersion ?? 4, {
        ...request,
        replicaId: options.brokerId
      }),
    fetchEarliestOffset: (tp, epoch) => listOffset(tp, epoch, EARLIEST),
    fetchLatestOffset: (tp, epoch) => listOffset(tp, epoch, LATEST),
    close: async () => {
      await connection.close?.()
    }
  }
}
