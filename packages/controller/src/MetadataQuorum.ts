/**
 * The metadata quorum as its leader describes it (DescribeQuorum, key 55), and the controllers as
 * DescribeCluster (key 60) lists them to an admin client that bootstraps from the controller listener
 * (KIP-919). A cluster has one controller today: it leads `__cluster_metadata` and is its only voter;
 * the brokers following the log are observers, each with the offset and time of its last metadata fetch.
 *
 * `FetchStates` is soft state the controller runtime holds (like `BrokerHeartbeats`): never written to
 * the metadata log, started afresh by each controller. Everything here is pure; the runtime passes in
 * the time.
 */
import { type DescribeCluster, type DescribeQuorum, Errors, type Fetch, type Spec, Uuid } from "@clustermirror/protocol"

export const METADATA_TOPIC = "__cluster_metadata"
export const METADATA_PARTITION = 0

/**
 * How long an observer that is not a registered broker stays listed after its last fetch (Kafka drops
 * observers that stopped fetching after a while, too).
 */
export const OBSERVER_SESSION_TIMEOUT_MS = 300_000

/** A replica of the metadata log as DescribeQuorum reports it; -1 where a value is unknown. */
export interface ReplicaState {
  readonly replicaId: number
  readonly replicaDirectoryId: Uuid.Uuid
  readonly logEndOffset: bigint
  readonly lastFetchTimestamp: bigint
  readonly lastCaughtUpTimestamp: bigint
}

/** The quorum of `__cluster_metadata` partition 0. */
export interface QuorumInfo {
  readonly leaderId: number
  readonly leaderEpoch: number
  readonly highWatermark: bigint
  readonly voters: ReadonlyArray<ReplicaState>
  readonly observers: ReadonlyArray<ReplicaState>
}

/** What the leader knows of one replica that fetches from it. */
export interface FetchState {
  readonly directoryId: Uuid.Uuid
  /** The offset of its last fetch: everything before it is in its log. */
  readonly fetchOffset: bigint
  readonly lastFetchMs: number
  /** The leader's log end when that fetch arrived. */
  readonly leaderEndAtLastFetch: bigint
  /** -1 until a fetch showed it had everything the leader had at some moment. */
  readonly lastCaughtUpMs: number
}

export type FetchStates = ReadonlyMap<number, FetchState>

export const empty: FetchStates = new Map()

/**
 * A fetch of the metadata log from `replicaId` at `fetchOffset`, arrived at `now` while the leader's log
 * ended at `leaderEnd`. The replica is caught up as of now when it asks from the leader's end; as of its
 * previous fetch when it asks from where the leader's log ended at that previous fetch.
 */
export const recordFetch = (
  states: FetchStates,
  replicaId: number,
  directoryId: Uuid.Uuid,
  fetchOffset: bigint,
  leaderEnd: bigint,
  now: number
): FetchStates => {
  if (replicaId < 0) return states
  const previous = states.get(replicaId)
  const caughtUpAt =
    fetchOffset >= leaderEnd
      ? now
      : previous !== undefined && fetchOffset >= previous.leaderEndAtLastFetch
        ? previous.lastFetchMs
        : -1
  const next = new Map(states)
  next.set(replicaId, {
    directoryId,
    fetchOffset,
    lastFetchMs: now,
    leaderEndAtLastFetch: leaderEnd,
    lastCaughtUpMs: Math.max(caughtUpAt, previous?.lastCaughtUpMs ?? -1)
  })
  return next
}

/** Forgets replicas that are not registered brokers and have not fetched within the observer timeout. */
export const expire = (states: FetchStates, registered: ReadonlySet<number>, now: number): FetchStates => {
  const stale = [...states].filter(
    ([id, s]) => !registered.has(id) && now - s.lastFetchMs > OBSERVER_SESSION_TIMEOUT_MS
  )
  if (stale.length === 0) return states
  const next = new Map(states)
  for (const [id] of stale) next.delete(id)
  return next
}

export interface QuorumInput {
  readonly leaderId: number
  readonly leaderEpoch: number
  /** The leader's metadata log directory id (its `meta.properties`). */
  readonly leaderDirectoryId: Uuid.Uuid
  /** The end of the committed log: the next offset to be written. */
  readonly highWatermark: bigint
  /** The registered brokers: observers, whether or not they fetched from this controller yet. */
  readonly registeredBrokers: Iterable<number>
  readonly fetches: FetchStates
  readonly now: number
  /** A quorum of several controllers: its voters and high watermark, as the Raft leader knows them. */
  readonly quorum?: VotersInput
}

/** The voters of a controller quorum, as its Raft leader reports them. */
export interface VotersInput {
  readonly highWatermark: bigint
  readonly voters: ReadonlyArray<ReplicaState>
}

/**
 * The single-controller quorum: the leader is the only voter, with the committed end as its log end and
 * `now` as its fetch and caught-up times (as Kafka reports its leader); observers are the registered
 * brokers and whoever else fetched lately, by id, without the leader itself (a combined node's broker).
 */
export const describe = (input: QuorumInput): QuorumInfo => {
  const now = BigInt(input.now)
  const ids = new Set([...input.registeredBrokers, ...input.fetches.keys()])
  ids.delete(input.leaderId)
  for (const v of input.quorum?.voters ?? []) ids.delete(v.replicaId)
  const observers = [...ids]
    .sort((a, b) => a - b)
    .map((id): ReplicaState => {
      const f = input.fetches.get(id)
      return f === undefined
        ? {
            replicaId: id,
            replicaDirectoryId: Uuid.ZERO,
            logEndOffset: -1n,
            lastFetchTimestamp: -1n,
            lastCaughtUpTimestamp: -1n
          }
        : {
            replicaId: id,
            replicaDirectoryId: f.directoryId,
            logEndOffset: f.fetchOffset,
            lastFetchTimestamp: BigInt(f.lastFetchMs),
            lastCaughtUpTimestamp: BigInt(f.lastCaughtUpMs)
          }
    })
  if (input.quorum !== undefined)
    return {
      leaderId: input.leaderId,
      leaderEpoch: input.leaderEpoch,
      highWatermark: input.quorum.highWatermark,
      voters: input.quorum.voters,
      observers
    }
  return {
    leaderId: input.leaderId,
    leaderEpoch: input.leaderEpoch,
    highWatermark: input.highWatermark,
    voters: [
      {
        replicaId: input.leaderId,
        replicaDirectoryId: input.leaderDirectoryId,
        logEndOffset: input.highWatermark,
        lastFetchTimestamp: now,
        lastCaughtUpTimestamp: now
      }
    ],
    observers
  }
}

/** A controller listener as DescribeQuorum's `Nodes` and DescribeCluster list it. */
export interface Endpoint {
  readonly name: string
  readonly host: string
  readonly port: number
}

/**
 * DescribeQuorum's answer: the quorum for exactly `__cluster_metadata` partition 0, with the voters'
 * listeners (v2 `Nodes`); any other topic or partition, or more than one, gets
 * UNKNOWN_TOPIC_OR_PARTITION on every partition asked for, as Kafka answers.
 */
export const describeQuorumResponse = (
  request: DescribeQuorum.Request,
  info: QuorumInfo,
  endpoints: ReadonlyArray<Endpoint>
): DescribeQuorum.Response => {
  const only = request.topics.length === 1 ? request.topics[0]! : undefined
  const valid =
    only !== undefined &&
    only.topicName === METADATA_TOPIC &&
    only.partitions.length === 1 &&
    only.partitions[0]!.partitionIndex === METADATA_PARTITION
  if (!valid)
    return describeQuorumRefused(
      request,
      Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
      "This server does not host this topic-partition."
    )
  return {
    errorCode: 0,
    errorMessage: null,
    topics: [
      {
        topicName: METADATA_TOPIC,
        partitions: [
          {
            partitionIndex: METADATA_PARTITION,
            errorCode: 0,
            errorMessage: null,
            leaderId: info.leaderId,
            leaderEpoch: info.leaderEpoch,
            highWatermark: info.highWatermark,
            currentVoters: info.voters,
            observers: info.observers
          }
        ]
      }
    ],
    nodes: info.voters.map((v) => ({
      nodeId: v.replicaId,
      listeners: v.replicaId === info.leaderId ? endpoints.map((e) => ({ ...e })) : []
    }))
  }
}

/** A Fetch answer of the metadata log to a broker: `partition` of `__cluster_metadata` partition 0. */
type FetchPartition = NonNullable<
  NonNullable<NonNullable<Spec.InputOf<typeof Fetch.Response>["responses"]>[number]["partitions"]>[number]
>

export const metadataFetchResponse = (
  partition: Omit<FetchPartition, "partitionIndex">
): Spec.InputOf<typeof Fetch.Response> => ({
  throttleTimeMs: 0,
  errorCode: 0,
  sessionId: 0,
  responses: [
    {
      topic: METADATA_TOPIC,
      topicId: Uuid.METADATA_TOPIC_ID,
      partitions: [{ partitionIndex: METADATA_PARTITION, ...partition }]
    }
  ]
})

/** DescribeQuorum refused on every partition asked for (an unknown one, or a voter that does not lead). */
export const describeQuorumRefused = (
  request: DescribeQuorum.Request,
  errorCode: number,
  errorMessage: string
): DescribeQuorum.Response => ({
  errorCode: 0,
  errorMessage: null,
  topics: request.topics.map((t) => ({
    topicName: t.topicName,
    partitions: t.partitions.map((p) => ({
      partitionIndex: p.partitionIndex,
      errorCode,
      errorMessage,
      leaderId: -1,
      leaderEpoch: -1,
      highWatermark: -1n,
      currentVoters: [],
      observers: []
    }))
  })),
  nodes: []
})

/** DescribeCluster's `EndpointType`s (KIP-919). */
export const EndpointType = { BROKER: 1, CONTROLLER: 2 } as const

export interface DescribedCluster {
  readonly clusterId: string
  readonly controllerId: number
  readonly brokers: DescribeCluster.Response["brokers"]
}

/**
 * DescribeCluster on a listener of endpoint type `expected` (brokers on a broker, controllers on a
 * controller): an endpoint type the request names but this listener is not gets MISMATCHED_ENDPOINT_TYPE,
 * an unknown one UNSUPPORTED_ENDPOINT_TYPE (INVALID_REQUEST in v0), as Kafka answers; a controller id
 * not among the listed nodes is reported as -1.
 */
export const describeClusterResponse = (
  apiVersion: number,
  request: DescribeCluster.Request,
  expected: number,
  cluster: () => DescribedCluster
): DescribeCluster.Response => {
  const requested = request.endpointType
  const known = requested === EndpointType.BROKER || requested === EndpointType.CONTROLLER
  const name = (t: number) => (t === EndpointType.BROKER ? "BROKER" : "CONTROLLER")
  if (!known || requested !== expected)
    return {
      throttleTimeMs: 0,
      errorCode:
        apiVersion === 0
          ? Errors.ErrorCode.INVALID_REQUEST
          : known
            ? Errors.ErrorCode.MISMATCHED_ENDPOINT_TYPE
            : Errors.ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
      errorMessage: known
        ? `The request was sent to an endpoint of type ${name(expected)}, but we wanted an endpoint of type ${name(requested)}`
        : `Unsupported endpoint type ${requested}`,
      endpointType: EndpointType.BROKER,
      clusterId: "",
      controllerId: -1,
      brokers: [],
      clusterAuthorizedOperations: -2147483648
    }
  const c = cluster()
  return {
    throttleTimeMs: 0,
    errorCode: 0,
    errorMessage: null,
    endpointType: expected,
    clusterId: c.clusterId,
    controllerId: c.brokers.some((b) => b.brokerId === c.controllerId) ? c.controllerId : -1,
    brokers: c.brokers,
    clusterAuthorizedOperations: -2147483648
  }
}
