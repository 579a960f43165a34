import type { Buffer } from "node:buffer"
import { Errors, Fetch, ListOffsets, OffsetForLeaderEpoch } from "@clustermirror/protocol"
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { LeaderRequestError } from "../src/FetcherError.js"
import * as NetworkLeaderEndpoint from "../src/NetworkLeaderEndpoint.js"
import { ReplicaFetcher } from "../src/ReplicaFetcher.js"
import { batches, pair, runToCompletion, TOPIC, TOPIC_ID, TP, write } from "./Fixtures.js"

const right = <A, E>(either: Either.Either<A, E>): A => {
  if (Either.isLeft(either)) throw either.left
  return either.right
}

/** A connection that speaks the wire codecs to the in-memory leader of a `pair`, recording each request. */
const wireConnection = (p: ReturnType<typeof pair>) => {
  const seen: Array<{ api: string; version: number; body: unknown }> = []
  const leader = p.leader.endpoint(19)
  let broken = false
  const connection: NetworkLeaderEndpoint.Connection = {
    request: async (api, version, body) => {
      if (broken) throw new Error("socket closed")
      const bytes = right(api.request.encode(version, body))
      let answer: Buffer
      if (api.key === Fetch.api.key) {
        const request = right(Fetch.Request.decode(version, bytes))
        seen.push({ api: api.name, version, body: request })
        answer = right(Fetch.Response.encode(version, await leader.fetch(request, version)))
      } else if (api.key === ListOffsets.api.key) {
        const request = right(ListOffsets.Request.decode(version, bytes))
        seen.push({ api: api.name, version, body: request })
        const q = request.topics[0]!.partitions[0]!
        const read = q.timestamp === -2n ? leader.fetchEarliestOffset : leader.fetchLatestOffset
        const found = await read({ topic: request.topics[0]!.name, partition: q.partitionIndex }, q.currentLeaderEpoch)
        answer = right(
          ListOffsets.Response.encode(version, {
            throttleTimeMs: 0,
            topics: [
              {
                name: request.topics[0]!.name,
                partitions: [
                  {
                    partitionIndex: q.partitionIndex,
                    errorCode: found.errorCode,
                    oldStyleOffsets: [],
                    timestamp: -1n,
                    offset: BigInt(found.offset),
                    leaderEpoch: found.leaderEpoch
                  }
                ]
              }
            ]
          })
        )
      } else if (api.key === OffsetForLeaderEpoch.api.key) {
        const request = right(OffsetForLeaderEpoch.Request.decode(version, bytes))
        seen.push({ api: api.name, version, body: request })
        answer = right(OffsetForLeaderEpoch.Response.encode(version, await leader.offsetForLeaderEpoch(request)))
      } else throw new Error(`unexpected ${api.name}`)
      return right(api.response.decode(version, answer))
    },
    close: async () => {
      broken = true
    }
  }
  return { connection, seen, breakIt: () => (broken = true) }
}

describe("NetworkLeaderEndpoint", () => {
  it("replicates through a connection, using ListOffsets as a replica when out of range", async () => {
    const p = pair()
    write(p.leaderLog, 0, 6, "a")
    p.leaderLog.updateHighWatermark(12)
    p.leaderLog.deleteRecordsBefore(6)
    p.leader.host({ topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: p.leaderLog, leaderEpoch: 0 })
    const wire = wireConnection(p)
    const endpoint = NetworkLeaderEndpoint.make({
      leaderId: 1,
      brokerId: 2,
      connection: wire.connection,
      fetchVersion: 17
    })
    const fetcher = new ReplicaFetcher({ brokerId: 2, brokerEpoch: 3n, endpoint, config: { replicaFetchWaitMaxMs: 0 } })
    fetcher.addPartitions([
      { topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: p.followerLog, currentLeaderEpoch: 0 }
    ])

    await runToCompletion(fetcher)

    expect(batches(p.followerLog)).toEqual(batches(p.leaderLog))
    expect(p.followerLog.logStartOffset).toBe(6)
    expect(wire.seen.map((s) => `${s.api} v${s.version}`).slice(0, 4)).toEqual([
      "Fetch v17",
      "ListOffsets v7",
      "ListOffsets v7",
      "Fetch v17"
    ])
    expect(wire.seen[1]!.body).toMatchObject({
      replicaId: 2,
      topics: [{ name: TOPIC, partitions: [{ timestamp: -1n }] }]
    })
    expect(wire.seen[2]!.body).toMatchObject({ topics: [{ partitions: [{ timestamp: -2n, currentLeaderEpoch: 0 }] }] })
  })

  it("sends OffsetForLeaderEpoch with this broker as the replica", async () => {
    const p = pair()
    write(p.leaderLog, 1, 2, "a")
    write(p.leaderLog, 3, 1, "b")
    p.leader.host({ topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: p.leaderLog, leaderEpoch: 3 })
    const wire = wireConnection(p)
    const endpoint = NetworkLeaderEndpoint.make({
      leaderId: 1,
      brokerId: 2,
      connection: wire.connection,
      fetchVersion: 12
    })

    const response = await endpoint.offsetForLeaderEpoch({
      replicaId: -1,
      topics: [{ topic: TOPIC, partitions: [{ partition: 0, currentLeaderEpoch: 3, leaderEpoch: 2 }] }]
    })

    expect(wire.seen[0]).toMatchObject({ api: "OffsetForLeaderEpoch", version: 4, body: { replicaId: 2 } })
    expect(response.topics[0]!.partitions[0]).toEqual({ errorCode: 0, partition: 0, leaderEpoch: 1, endOffset: 4n })
  })

  it("turns connection failures into LeaderRequestError and the fetcher into backoff", async () => {
    const p = pair()
    p.leader.host({ topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: p.leaderLog, leaderEpoch: 0 })
    const wire = wireConnection(p)
    const endpoint = NetworkLeaderEndpoint.make({
      leaderId: 1,
      brokerId: 2,
      connection: wire.connection,
      fetchVersion: 19
    })
    await endpoint.close()
    await expect(endpoint.fetchLatestOffset(TP, 0)).rejects.toBeInstanceOf(LeaderRequestError)

    const fetcher = new ReplicaFetcher({ brokerId: 2, brokerEpoch: 3n, endpoint, now: () => 0 })
    write(p.followerLog, 0, 1, "x")
    fetcher.addPartitions([
      { topic: TOPIC, topicId: TOPIC_ID, partition: 0, log: p.followerLog, currentLeaderEpoch: 0 }
    ])
    const round = await fetcher.runOnce()
    expect(round._tag).toBe("RequestFailed")
    expect(round._tag === "RequestFailed" && round.error).toBeInstanceOf(LeaderRequestError)
    expect(fetcher.partitionState(TP)?.delayedUntil).toBe(1000)
  })

  it("refuses Fetch versions without LastFetchedEpoch", () => {
    const p = pair()
    const { connection } = wireConnection(p)
    expect(() => NetworkLeaderEndpoint.make({ leaderId: 1, brokerId: 2, connection, fetchVersion: 11 })).toThrow()
    expect(Errors.ErrorCode.NONE).toBe(0)
  })
})
