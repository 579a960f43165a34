/**
 * The network face of a voter: Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch and FetchSnapshot
 * handlers on a `RequestChannel.Handlers` registry, each decoding the wire request (`RaftWire`),
 * running it through the voter's `RaftRuntime` and encoding the core's answer. A request that is not
 * for `__cluster_metadata-0` alone closes the connection, as a malformed request does. A Fetch of
 * another partition, or from a replica that is not a voter, goes to `fetchFallback` when one is given
 * (the controller's face for brokers following the log). It translates; the core decides.
 */
import type { RequestChannel } from "@clustermirror/network"
import { BeginQuorumEpoch, EndQuorumEpoch, Fetch, FetchSnapshot, Vote } from "@clustermirror/protocol"
import { Effect } from "effect"
import { Buffer } from "node:buffer"
import type { RaftRuntime } from "./RaftRuntime.js"
import * as RaftWire from "./RaftWire.js"

export interface Options {
  /** The voters' ids: a Fetch from anyone else goes to `fetchFallback`. */
  readonly voters: ReadonlyArray<number>
  readonly fetchFallback?: RequestChannel.Handle<typeof Fetch.Request.fields, typeof Fetch.Response.fields>
}

/** Thrown to the request channel, which closes the connection and logs why. */
class NotForThisQuorum extends Error {}

const incoming = (decoded: RaftWire.Incoming) => {
  if (typeof decoded === "string") throw new NotForThisQuorum(decoded)
  return decoded
}

const expect = <T extends RaftWire.Response["_tag"]>(
  response: RaftWire.Response,
  tag: T
): Extract<RaftWire.Response, { _tag: T }> => {
  if (response._tag !== tag) throw new Error(`the core answered ${response._tag} where ${tag} was due`)
  return response as Extract<RaftWire.Response, { _tag: T }>
}

/** Registers the raft APIs on `handlers`, answered by `runtime`. */
export const register = (
  handlers: RequestChannel.Handlers,
  runtime: RaftRuntime,
  options: Options
): RequestChannel.Handlers => {
  const ask = (d: Exclude<RaftWire.Incoming, string>) => Effect.runPromise(runtime.handle(d.from, d.request))
  handlers.register(Vote.api, async (_ctx, req) =>
    RaftWire.voteResponse(expect(await ask(incoming(RaftWire.fromVoteRequest(req))), "VoteResponse"))
  )
  handlers.register(BeginQuorumEpoch.api, async (_ctx, req) =>
    RaftWire.beginQuorumEpochResponse(
      expect(await ask(incoming(RaftWire.fromBeginQuorumEpochRequest(req))), "BeginQuorumEpochResponse")
    )
  )
  handlers.register(EndQuorumEpoch.api, async (_ctx, req) =>
    RaftWire.endQuorumEpochResponse(
      expect(await ask(incoming(RaftWire.fromEndQuorumEpochRequest(req))), "EndQuorumEpochResponse")
    )
  )
  handlers.register(Fetch.api, async (ctx, req) => {
    const decoded = RaftWire.fromFetchRequest(req)
    const fallback = options.fetchFallback
    if (fallback !== undefined && (typeof decoded === "string" || !options.voters.includes(decoded.from)))
      return fallback(ctx, req)
    const response = expect(await ask(incoming(decoded)), "FetchResponse")
    const batches = response.records.length === 0 ? Buffer.alloc(0) : RaftWire.fetchedBatches(response.records)
    if (batches === undefined) throw new Error("a fetch answer without the log's batches")
    return RaftWire.fetchResponse(response, batches)
  })
  handlers.register(FetchSnapshot.api, async (_ctx, req) =>
    RaftWire.fetchSnapshotResponse(
      expect(await ask(incoming(RaftWire.fromFetchSnapshotRequest(req))), "FetchSnapshotResponse")
    )
  )
  return handlers
}
