/**
 * The KRaft RPCs (Vote 52, BeginQuorumEpoch 53, EndQuorumEpoch 54, FetchSnapshot 59) against Apache
 * Kafka 4.4's own serialization: `fixtures/CaptureRaftMessages.java` wrote each message at every
 * version with Kafka's generated classes into `fixtures/raft/`. Each must decode to the values that
 * program set and encode back to the same bytes.
 */
import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { Buffer } from "node:buffer"
import { readdirSync, readFileSync } from "node:fs"
import * as BeginQuorumEpoch from "../src/apis/BeginQuorumEpoch.js"
import * as EndQuorumEpoch from "../src/apis/EndQuorumEpoch.js"
import * as FetchSnapshot from "../src/apis/FetchSnapshot.js"
import * as Vote from "../src/apis/Vote.js"
import * as Apis from "../src/Apis.js"

const dir = new URL("./fixtures/raft/", import.meta.url)
const fixture = (api: string, type: "request" | "response", version: number): Buffer => {
  const json: unknown = JSON.parse(readFileSync(new URL(`${api}-${type}-v${version}.json`, dir), "utf8"))
  if (typeof json !== "object" || json === null || !("hex" in json) || typeof json.hex !== "string")
    throw new Error(`${api}-${type}-v${version}: no hex`)
  return Buffer.from(json.hex, "hex")
}
const hex = (b: Uint8Array) => Buffer.from(b).toString("hex")
const TOPIC = "__cluster_metadata"
const DIR_A = Buffer.from("0102030405060708090a0b0c0d0e0f10", "hex").toString("base64url")
const DIR_B = Buffer.from("1112131415161718191a1b1c1d1e1f20", "hex").toString("base64url")

/** Decodes the fixture, checks it encodes back to its bytes, and returns the value. */
const roundTrip = <T>(
  m: {
    readonly decode: (v: number, b: Uint8Array) => Either.Either<T, unknown>
    readonly encode: (v: number, x: T) => Either.Either<Uint8Array, unknown>
  },
  api: string,
  type: "request" | "response",
  version: number
): T => {
  const bytes = fixture(api, type, version)
  const value = Either.getOrThrow(m.decode(version, bytes))
  expect(hex(Either.getOrThrow(m.encode(version, value)))).toBe(hex(bytes))
  return value
}

describe("KRaft RPCs against Kafka 4.4's serialization", () => {
  it("every fixture is of a registered API and version", () => {
    const files = readdirSync(dir).filter((f) => f.endsWith(".json"))
    expect(files.length).toBe(18)
    for (const f of files) {
      const json: unknown = JSON.parse(readFileSync(new URL(f, dir), "utf8"))
      if (typeof json !== "object" || json === null || !("apiKey" in json) || !("apiVersion" in json))
        throw new Error(`${f}: no key`)
      const api = Apis.byKey.get(Number(json.apiKey))
      expect(api?.name).toBe(f.split("-")[0])
    }
  })

  it("Vote v0-v2: PreVote from v2, directory ids from v1, NodeEndpoints tagged from v1", () => {
    for (const v of [0, 1, 2]) {
      const req = roundTrip(Vote.Request, "Vote", "request", v)
      expect(req.clusterId).toBe("cm-cluster")
      expect(req.voterId).toBe(v >= 1 ? 3 : -1)
      expect(req.topics[0]?.topicName).toBe(TOPIC)
      expect(req.topics[0]?.partitions[0]).toMatchObject({
        partitionIndex: 0,
        replicaEpoch: 7,
        replicaId: 2,
        lastOffsetEpoch: 6,
        lastOffset: 1234n,
        preVote: v >= 2
      })
      if (v >= 1)
        expect(req.topics[0]?.partitions[0]).toMatchObject({ replicaDirectoryId: DIR_A, voterDirectoryId: DIR_B })
      const res = roundTrip(Vote.Response, "Vote", "response", v)
      expect(res.topics[0]?.partitions[0]).toMatchObject({
        errorCode: 74,
        leaderId: -1,
        leaderEpoch: 8,
        voteGranted: false
      })
      expect(res.nodeEndpoints).toEqual(v >= 1 ? [{ nodeId: 1, host: "c1.example", port: 9093 }] : [])
    }
  })

  it("BeginQuorumEpoch v0-v1: flexible from v1 with the voter, its directory and the leader's endpoints", () => {
    for (const v of [0, 1]) {
      const req = roundTrip(BeginQuorumEpoch.Request, "BeginQuorumEpoch", "request", v)
      expect(req.topics[0]?.partitions[0]).toMatchObject({ partitionIndex: 0, leaderId: 1, leaderEpoch: 9 })
      expect(req.voterId).toBe(v >= 1 ? 2 : -1)
      expect(req.leaderEndpoints).toEqual(v >= 1 ? [{ name: "CONTROLLER", host: "c1.example", port: 9093 }] : [])
      const res = roundTrip(BeginQuorumEpoch.Response, "BeginQuorumEpoch", "response", v)
      expect(res.topics[0]?.partitions[0]).toMatchObject({ errorCode: 0, leaderId: 1, leaderEpoch: 9 })
    }
  })

  it("EndQuorumEpoch v0-v1: PreferredSuccessors in v0, PreferredCandidates from v1", () => {
    const v0 = roundTrip(EndQuorumEpoch.Request, "EndQuorumEpoch", "request", 0)
    expect(v0.topics[0]?.partitions[0]).toMatchObject({ leaderId: 1, leaderEpoch: 9, preferredSuccessors: [3, 2] })
    const v1 = roundTrip(EndQuorumEpoch.Request, "EndQuorumEpoch", "request", 1)
    expect(v1.topics[0]?.partitions[0]?.preferredCandidates).toEqual([
      { candidateId: 3, candidateDirectoryId: DIR_A },
      { candidateId: 2, candidateDirectoryId: DIR_B }
    ])
    for (const v of [0, 1]) {
      const res = roundTrip(EndQuorumEpoch.Response, "EndQuorumEpoch", "response", v)
      expect(res.topics[0]?.partitions[0]).toMatchObject({ leaderId: 1, leaderEpoch: 9 })
    }
  })

  it("FetchSnapshot v0-v1: the snapshot id, position, tagged cluster id and leader, unaligned records", () => {
    for (const v of [0, 1]) {
      const req = roundTrip(FetchSnapshot.Request, "FetchSnapshot", "request", v)
      expect(req).toMatchObject({ clusterId: "cm-cluster", replicaId: 2, maxBytes: 1048576 })
      expect(req.topics[0]?.partitions[0]).toMatchObject({
        partition: 0,
        currentLeaderEpoch: 9,
        snapshotId: { endOffset: 500n, epoch: 8 },
        position: 4096n
      })
      const res = roundTrip(FetchSnapshot.Response, "FetchSnapshot", "response", v)
      const p = res.topics[0]?.partitions[0]
      expect(p).toMatchObject({
        index: 0,
        snapshotId: { endOffset: 500n, epoch: 8 },
        currentLeader: { leaderId: 1, leaderEpoch: 9 },
        size: 10000n,
        position: 4096n
      })
      expect(hex(p?.unalignedRecords ?? new Uint8Array())).toBe("01020304050607")
    }
  })
})
