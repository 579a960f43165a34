/**
 * The configuration of one voter of a static KRaft quorum, with Kafka's property names and
 * defaults. Parsing `controller.quorum.voters` is here; nothing else is read from the environment.
 */
import { Either } from "effect"
import { InvalidQuorumVoters } from "./RaftError.js"

/** One entry of `controller.quorum.voters`: `id@host:port`. */
export interface VoterEndpoint {
  readonly id: number
  readonly host: string
  readonly port: number
}

/** Deliberate defects, for proving that the simulation catches them. Never set outside tests. */
export interface BrokenVariant {
  /** Followers report (and the leader counts) offsets that are appended but not yet flushed. */
  readonly ackBeforeFlush?: boolean
  /** A voter grants its vote to every candidate of an epoch, not only to the first. */
  readonly voteTwice?: boolean
}

export interface RaftConfig {
  /** `node.id` of this voter. */
  readonly nodeId: number
  /** The ids of `controller.quorum.voters`, ascending. */
  readonly voters: ReadonlyArray<number>
  /** The cluster id every request carries (`clusterId`). */
  readonly clusterId: string
  /** `controller.quorum.election.timeout.ms`: an election starts after a random wait in [T, 2T]. */
  readonly electionTimeoutMs: number
  /** `controller.quorum.fetch.timeout.ms`: a follower without a successful fetch for this long becomes prospective. */
  readonly fetchTimeoutMs: number
  /** `controller.quorum.election.backoff.max.ms`: the upper bound of the random wait after a lost election. */
  readonly electionBackoffMaxMs: number
  /** `controller.quorum.request.timeout.ms`: an unanswered Fetch or FetchSnapshot is sent again after this. */
  readonly requestTimeoutMs: number
  /** How long a follower waits before fetching again after a response without records (the long-poll wait). */
  readonly fetchWaitMs: number
  /** The most records one Fetch response carries. */
  readonly fetchMaxRecords: number
  readonly broken?: BrokenVariant
}

/** Kafka's defaults, for a voter `nodeId` of the quorum `voters`. */
export const make = (
  nodeId: number,
  voters: ReadonlyArray<number>,
  overrides: Partial<Omit<RaftConfig, "nodeId" | "voters">> = {}
): RaftConfig => ({
  nodeId,
  voters: [...voters].sort((a, b) => a - b),
  clusterId: "clustermirror",
  electionTimeoutMs: 1000,
  fetchTimeoutMs: 2000,
  electionBackoffMaxMs: 1000,
  requestTimeoutMs: 2000,
  fetchWaitMs: 500,
  fetchMaxRecords: 1000,
  ...overrides
})

/** The number of voters that make a majority. */
export const majority = (config: RaftConfig): number => Math.floor(config.voters.length / 2) + 1

/** Parses `controller.quorum.voters` (`1@host1:9093,2@host2:9093,...`). */
export const parseVoters = (value: string): Either.Either<ReadonlyArray<VoterEndpoint>, InvalidQuorumVoters> => {
  const fail = (reason: string) => Either.left(new InvalidQuorumVoters({ value, reason }))
  const parts = value
    .split(",")
    .map((p) => p.trim())
    .filter((p) => p.length > 0)
  if (parts.length === 0) return fail("no voters")
  const voters: Array<VoterEndpoint> = []
  for (const part of parts) {
    const m = /^(\d+)@(\[[^\]]+\]|[^:@\s]+):(\d+)$/.exec(part)
    if (m === null) return fail(`"${part}" is not id@host:port`)
    const id = Number(m[1])
    const port = Number(m[3])
    if (!Number.isSafeInteger(id) || id > 2147483647) return fail(`"${m[1]}" is not a node id`)
    if (port < 1 || port > 65535) return fail(`port ${port} is out of range`)
    if (voters.some((v) => v.id === id)) return fail(`node id ${id} appears twice`)
    voters.push({ id, host: m[2] ?? "", port })
  }
  return Either.right(voters)
}

/** Formats voters back into `controller.quorum.voters`. */
export const formatVoters = (voters: ReadonlyArray<VoterEndpoint>): string =>
  voters.map((v) => `${v.id}@${v.host}:${v.port}`).join(",")
