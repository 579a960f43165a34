import { BeginQuorumEpoch, EndQuorumEpoch, Fetch, FetchSnapshot, Vote } from "@clustermirror/protocol"
import type { RaftMessages } from "@clustermirror/raft"
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import fc from "fast-check"
import { Buffer } from "node:buffer"
import * as RaftLogStore from "../src/RaftLogStore.js"
import * as RaftWire from "../src/RaftWire.js"

const id = fc.integer({ min: -1, max: 1000 })
const epoch = fc.integer({ min: 0, max: 2 ** 31 - 1 })
const offset = fc.integer({ min: 0, max: 2 ** 40 })
const clusterId = fc.string({ maxLength: 22 })
const leader = fc.record({ leaderId: id, leaderEpoch: epoch })
const pair = fc.record({ endOffset: offset, epoch })
const V = RaftWire.VERSIONS

/** Encodes the wire body at `version` and decodes it again, as the network does. */
const wire = <F extends Parameters<typeof Vote.Request.encode>[1], T>(
  message: {
    encode: (v: number, body: F) => Either.Either<Buffer, unknown>
    decode: (v: number, b: Uint8Array) => Either.Either<T, unknown>
  },
  version: number,
  body: F
): T => Either.getOrThrow(message.decode(version, Either.getOrThrow(message.encode(version, body))))

describe("RaftWire", () => {
  it("carries every request field through the wire and back", () => {
    fc.assert(
      fc.property(
        fc.record({
          clusterId,
          voterId: id,
          replicaEpoch: epoch,
          replicaId: id,
          lastOffsetEpoch: epoch,
          lastOffset: offset,
          preVote: fc.boolean()
        }),
        (r) => {
          const request: RaftMessages.VoteRequest = { _tag: "VoteRequest", ...r }
          const back = RaftWire.fromVoteRequest(wire(Vote.Request, V.vote, RaftWire.voteRequest(request) as never))
          expect(back).toEqual({ from: r.replicaId, request })
        }
      )
    )
    fc.assert(
      fc.property(fc.record({ clusterId, voterId: id, leaderId: id, leaderEpoch: epoch }), (r) => {
        const request: RaftMessages.BeginQuorumEpochRequest = { _tag: "BeginQuorumEpochRequest", ...r }
        const body = wire(
          BeginQuorumEpoch.Request,
          V.beginQuorumEpoch,
          RaftWire.beginQuorumEpochRequest(request) as never
        )
        expect(RaftWire.fromBeginQuorumEpochRequest(body)).toEqual({ from: r.leaderId, request })
      })
    )
    fc.assert(
      fc.property(
        fc.record({
          clusterId,
          leaderId: id,
          leaderEpoch: epoch,
          preferredCandidates: fc.array(fc.record({ candidateId: id }))
        }),
        (r) => {
          const request: RaftMessages.EndQuorumEpochRequest = { _tag: "EndQuorumEpochRequest", ...r }
          const body = wire(EndQuorumEpoch.Request, V.endQuorumEpoch, RaftWire.endQuorumEpochRequest(request) as never)
          expect(RaftWire.fromEndQuorumEpochRequest(body)).toEqual({ from: r.leaderId, request })
        }
      )
    )
    fc.assert(
      fc.property(
        fc.record({
          clusterId,
          replicaId: fc.integer({ min: 0, max: 1000 }),
          replicaEpoch: epoch,
          maxWaitMs: fc.integer({ min: 0, max: 10000 }),
          currentLeaderEpoch: epoch,
          fetchOffset: offset,
          lastFetchedEpoch: epoch,
          logStartOffset: offset
        }),
        (r) => {
          const request: RaftMessages.FetchRequest = { _tag: "FetchRequest", ...r }
          const body = wire(Fetch.Request, V.fetch, RaftWire.fetchRequest(request) as never)
          expect(RaftWire.isMetadataFetch(body)).toBe(true)
          expect(RaftWire.fromFetchRequest(body)).toEqual({ from: r.replicaId, request })
        }
      )
    )
    fc.assert(
      fc.property(
        fc.record({ clusterId, replicaId: id, currentLeaderEpoch: epoch, snapshotId: pair, position: offset }),
        fc.integer({ min: 1, max: 2 ** 31 - 1 }),
        (r, maxBytes) => {
          const request = RaftWire.withSnapshotMaxBytes({ _tag: "FetchSnapshotRequest", ...r }, maxBytes)
          const body = wire(FetchSnapshot.Request, V.fetchSnapshot, RaftWire.fetchSnapshotRequest(request) as never)
          expect(body.maxBytes).toBe(maxBytes)
          const decoded = RaftWire.fromFetchSnapshotRequest(body)
          expect(decoded).toEqual({ from: r.replicaId, request })
          if (typeof decoded !== "string" && decoded.request._tag === "FetchSnapshotRequest")
            expect(RaftWire.snapshotMaxBytes(decoded.request)).toBe(maxBytes)
        }
      )
    )
  })

  it("carries every response field through the wire and back, a fetch's records as the leader's batches", () => {
    fc.assert(
      fc.property(
        fc.record({
          errorCode: fc.integer({ min: 0, max: 120 }),
          ...{ leaderId: id, leaderEpoch: epoch },
          voteGranted: fc.boolean()
        }),
        (r) => {
          const response: RaftMessages.VoteResponse = { _tag: "VoteResponse", ...r }
          expect(
            RaftWire.fromVoteResponse(wire(Vote.Response, V.vote, RaftWire.voteResponse(response) as never))
          ).toEqual(response)
        }
      )
    )
    fc.assert(
      fc.property(fc.record({ errorCode: fc.integer({ min: 0, max: 120 }), leaderId: id, leaderEpoch: epoch }), (r) => {
        const begin: RaftMessages.BeginQuorumEpochResponse = { _tag: "BeginQuorumEpochResponse", ...r }
        const body = wire(
          BeginQuorumEpoch.Response,
          V.beginQuorumEpoch,
          RaftWire.beginQuorumEpochResponse(begin) as never
        )
        expect(RaftWire.fromBeginQuorumEpochResponse(body)).toEqual(begin)
        const end: RaftMessages.EndQuorumEpochResponse = { _tag: "EndQuorumEpochResponse", ...r }
        const body2 = wire(EndQuorumEpoch.Response, V.endQuorumEpoch, RaftWire.endQuorumEpochResponse(end) as never)
        expect(RaftWire.fromEndQuorumEpochResponse(body2)).toEqual(end)
      })
    )
    const records: ReadonlyArray<RaftLogStore.Record> = [
      { _tag: "LeaderChange", offset: 10, epoch: 4, value: { leaderId: 2, voters: [1, 2, 3], grantingVoters: [2, 3] } },
      { _tag: "Data", offset: 11, epoch: 4, value: Buffer.from("a") },
      { _tag: "Data", offset: 12, epoch: 4, value: Buffer.from("b") }
    ]
    const batches = Buffer.concat(RaftLogStore.encodeRecords(records, 77))
    fc.assert(
      fc.property(
        fc.record({
          errorCode: fc.integer({ min: 0, max: 120 }),
          highWatermark: fc.integer({ min: -1, max: 2 ** 40 }),
          logStartOffset: offset,
          divergingEpoch: fc.option(pair, { nil: null }),
          currentLeader: leader,
          snapshotId: fc.option(pair, { nil: null }),
          withRecords: fc.boolean()
        }),
        ({ withRecords, ...r }) => {
          const response: RaftMessages.FetchResponse<Buffer> = {
            _tag: "FetchResponse",
            ...r,
            records: withRecords ? records : []
          }
          const body = wire(
            Fetch.Response,
            V.fetch,
            RaftWire.fetchResponse(response, withRecords ? batches : Buffer.alloc(0)) as never
          )
          const back = RaftWire.fromFetchResponse(body)
          expect(back).toEqual(response)
          if (typeof back !== "string" && withRecords)
            expect(RaftWire.fetchedBatches(back.records)?.equals(batches)).toBe(true)
        }
      )
    )
    fc.assert(
      fc.property(
        fc.record({
          errorCode: fc.integer({ min: 0, max: 120 }),
          snapshotId: pair,
          currentLeader: leader,
          size: offset,
          position: offset
        }),
        fc.uint8Array({ maxLength: 300 }),
        (r, chunk) => {
          // The snapshot's bytes from Position on travel as UnalignedRecords, unchanged.
          const response = RaftWire.withSnapshotChunk(
            { _tag: "FetchSnapshotResponse", ...r, unalignedRecords: [] },
            Buffer.from(chunk)
          )
          const body = wire(FetchSnapshot.Response, V.fetchSnapshot, RaftWire.fetchSnapshotResponse(response) as never)
          const decoded = RaftWire.fromFetchSnapshotResponse(body)
          expect(decoded).toEqual(response)
          if (typeof decoded !== "string") expect(RaftWire.snapshotChunk(decoded).equals(Buffer.from(chunk))).toBe(true)
        }
      )
    )
  })

  it("refuses requests that are not for __cluster_metadata-0 alone", () => {
    const vote = RaftWire.voteRequest({
      _tag: "VoteRequest",
      clusterId: "c",
      voterId: 1,
      replicaEpoch: 1,
      replicaId: 2,
      lastOffsetEpoch: 0,
      lastOffset: 0,
      preVote: false
    })
    const topic = (vote.topics ?? [])[0]!
    const other = { ...vote, topics: [{ ...topic, topicName: "orders" }] }
    expect(RaftWire.fromVoteRequest(wire(Vote.Request, V.vote, other as never))).toMatch(
      /not a request for __cluster_metadata/
    )
    const two = { ...vote, topics: [topic, topic] }
    expect(RaftWire.fromVoteRequest(wire(Vote.Request, V.vote, two as never))).toMatch(/alone/)
  })
})
