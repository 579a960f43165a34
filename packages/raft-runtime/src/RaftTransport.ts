/**
 * RaftTransport: how a voter's requests reach the other voters and their answers come back. The TCP
 * layer speaks Kafka's wire protocol (`RaftWire`) over one client connection per voter, opened on
 * first use and opened again after it fails; the versions are fixed (Vote v2, BeginQuorumEpoch v1,
 * EndQuorumEpoch v1, Fetch v17, FetchSnapshot v1) and not negotiated. A failed or unanswered request
 * is a `TransportError`: the core's timers send again, so nothing here retries.
 */
import { Connection } from "@clustermirror/client"
import { BeginQuorumEpoch, EndQuorumEpoch, Fetch, FetchSnapshot, Vote } from "@clustermirror/protocol"
import type { RaftConfig, RaftMessages } from "@clustermirror/raft"
import { Context, Effect } from "effect"
import type { Scope } from "effect"
import { TransportError } from "./RaftRuntimeError.js"
import * as RaftWire from "./RaftWire.js"

export interface RaftTransportService {
  /** Sends `request` to voter `to` and returns its answer. */
  readonly send: (to: number, request: RaftMessages.RaftRequest) => Effect.Effect<RaftWire.Response, TransportError>
}

export class RaftTransport extends Context.Tag("@clustermirror/raft-runtime/RaftTransport")<
  RaftTransport,
  RaftTransportService
>() {}

export interface TcpOptions {
  /** The voters' endpoints (`controller.quorum.voters`). */
  readonly voters: ReadonlyArray<RaftConfig.VoterEndpoint>
  /** The sending voter, for the client id. */
  readonly nodeId: number
  /** `controller.quorum.request.timeout.ms`. */
  readonly requestTimeoutMs: number
  readonly connectTimeoutMs?: number
}

const decoded = <A>(to: number, value: A | string): Effect.Effect<A, TransportError> =>
  typeof value === "string" ? Effect.fail(new TransportError({ to, reason: value })) : Effect.succeed(value)

/** Kafka's wire protocol over TCP; the connections close with the scope. */
export const tcp = (options: TcpOptions): Effect.Effect<RaftTransportService, never, Scope.Scope> =>
  Effect.gen(function* () {
    const connections = new Map<number, Promise<Connection.Connection>>()
    yield* Effect.addFinalizer(() =>
      Effect.promise(async () => {
        const open = [...connections.values()]
        connections.clear()
        for (const c of open) await c.then((conn) => conn.close()).catch(() => undefined)
      })
    )
    const connect = (to: number): Promise<Connection.Connection> => {
      const existing = connections.get(to)
      if (existing !== undefined) return existing
      const endpoint = options.voters.find((v) => v.id === to)
      if (endpoint === undefined) return Promise.reject(new Error(`voter ${to} has no endpoint`))
      const opening = Connection.open({
        host: endpoint.host.replace(/^\[(.*)\]$/, "$1"),
        port: endpoint.port,
        clientId: `raft-client-${options.nodeId}`,
        negotiate: false,
        requestTimeoutMs: options.requestTimeoutMs,
        connectTimeoutMs: options.connectTimeoutMs ?? options.requestTimeoutMs
      })
      connections.set(to, opening)
      opening.then(
        (conn) =>
          conn.onClose(() => {
            if (connections.get(to) === opening) connections.delete(to)
          }),
        () => {
          if (connections.get(to) === opening) connections.delete(to)
        }
      )
      return opening
    }
    const call = <A>(to: number, f: (c: Connection.Connection) => Promise<A>): Effect.Effect<A, TransportError> =>
      Effect.tryPromise({
        try: () => connect(to).then(f),
        catch: (e) => new TransportError({ to, reason: e instanceof Error ? e.message : String(e) })
      })
    const v = RaftWire.VERSIONS
    const send = (to: number, r: RaftMessages.RaftRequest): Effect.Effect<RaftWire.Response, TransportError> => {
      switch (r._tag) {
        case "VoteRequest":
          return Effect.flatMap(
            call(to, (c) => c.request(Vote.api, v.vote, RaftWire.voteRequest(r))),
            (w) => decoded(to, RaftWire.fromVoteResponse(w))
          )
        case "BeginQuorumEpochRequest":
          return Effect.flatMap(
            call(to, (c) => c.request(BeginQuorumEpoch.api, v.beginQuorumEpoch, RaftWire.beginQuorumEpochRequest(r))),
            (w) => decoded(to, RaftWire.fromBeginQuorumEpochResponse(w))
          )
        case "EndQuorumEpochRequest":
          return Effect.flatMap(
            call(to, (c) => c.request(EndQuorumEpoch.api, v.endQuorumEpoch, RaftWire.endQuorumEpochRequest(r))),
            (w) => decoded(to, RaftWire.fromEndQuorumEpochResponse(w))
          )
        case "FetchRequest":
          return Effect.flatMap(
            call(to, (c) =>
              c.request(Fetch.api, v.fetch, RaftWire.fetchRequest(r), {
                timeoutMs: options.requestTimeoutMs + r.maxWaitMs
              })
            ),
            (w) => decoded(to, RaftWire.fromFetchResponse(w))
          )
        case "FetchSnapshotRequest":
          return Effect.flatMap(
            call(to, (c) => c.request(FetchSnapshot.api, v.fetchSnapshot, RaftWire.fetchSnapshotRequest(r))),
            (w) => decoded(to, RaftWire.fromFetchSnapshotResponse(w))
          )
      }
    }
    return { send }
  })

/** The voters of an in-process quorum, for `memory`: who answers, and who is cut off. */
export interface MemoryNetwork {
  readonly voters: Map<number, (from: number, request: RaftMessages.RaftRequest) => Effect.Effect<RaftWire.Response>>
  /** Voters cut off from every other: their requests and the requests to them fail. */
  readonly isolated: Set<number>
}

export const makeMemoryNetwork = (): MemoryNetwork => ({ voters: new Map(), isolated: new Set() })

/** The transport of voter `self` in an in-process network (deterministic tests). */
export const memory = (network: MemoryNetwork, self: number): RaftTransportService => ({
  send: (to, request) =>
    Effect.suspend(() => {
      const handle = network.voters.get(to)
      if (handle === undefined) return Effect.fail(new TransportError({ to, reason: "not running" }))
      if (network.isolated.has(self) || network.isolated.has(to))
        return Effect.fail(new TransportError({ to, reason: "isolated" }))
      return handle(self, request)
    })
})
