import { describe, expect, it } from "@effect/vitest"
import { Errors } from "../src/index.js"

describe("Errors", () => {
  it("has unique codes and unique names", () => {
    expect(new Set(Errors.all.map((e) => e.code)).size).toBe(Errors.all.length)
    expect(new Set(Errors.all.map((e) => e.name)).size).toBe(Errors.all.length)
    expect(Errors.byCode.size).toBe(Errors.all.length)
    expect(Errors.byName.size).toBe(Errors.all.length)
  })

  it("covers every Kafka code from -1 to 133 without gaps", () => {
    for (let code = -1; code <= 133; code++) expect(Errors.byCode.has(code), `code ${code}`).toBe(true)
  })

  it("holds KIP-1279's codes 134-146 and leaves 135 unassigned", () => {
    const kip: ReadonlyArray<readonly [number, string]> = [
      [134, "READ_ONLY_TOPIC"],
      [136, "CLUSTER_MIRROR_ALREADY_EXISTS"],
      [137, "UNKNOWN_CLUSTER_MIRROR"],
      [138, "TOPIC_ALREADY_IN_CLUSTER_MIRROR"],
      [139, "TOPIC_NOT_IN_CLUSTER_MIRROR"],
      [140, "MIRROR_TOPIC_ALREADY_PAUSED"],
      [141, "MIRROR_TOPIC_NOT_PAUSED"],
      [142, "MIRROR_TOPIC_BEING_STOPPED"],
      [143, "CLUSTER_MIRROR_NOT_EMPTY"],
      [144, "CLUSTER_MIRROR_AUTHORIZATION_FAILED"],
      [145, "INVALID_CLUSTER_MIRROR_STATES"],
      [146, "MIRROR_TOPIC_NOT_STOPPED"]
    ]
    for (const [code, name] of kip) {
      expect(Errors.byCode.get(code)?.name).toBe(name)
      expect(Errors.isRetriable(code)).toBe(false)
    }
    expect(Errors.byCode.has(135)).toBe(false)
    expect(Math.max(...Errors.all.map((e) => e.code))).toBe(146)
  })

  it("types each code as its literal and rejects misspelled names", () => {
    const notLeader: 6 = Errors.ErrorCode.NOT_LEADER_OR_FOLLOWER
    const readOnly: 134 = Errors.ErrorCode.READ_ONLY_TOPIC
    expect([notLeader, readOnly]).toEqual([6, 134])
    expect(Errors.ErrorCode.UNKNOWN_SERVER_ERROR).toBe(-1)
    expect(Errors.ErrorCode.NONE).toBe(0)
    // @ts-expect-error misspelled names are not keys of ErrorCode
    expect(Errors.ErrorCode.NOT_LEADER_FOR_PARTITION).toBeUndefined()
  })

  it("marks retriable codes as Kafka's RetriableException subclasses do", () => {
    expect(Errors.isRetriable(Errors.ErrorCode.NOT_LEADER_OR_FOLLOWER)).toBe(true)
    expect(Errors.isRetriable(Errors.ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)).toBe(true)
    expect(Errors.isRetriable(Errors.ErrorCode.UNKNOWN_TOPIC_ID)).toBe(true)
    expect(Errors.isRetriable(Errors.ErrorCode.OFFSET_OUT_OF_RANGE)).toBe(false)
    expect(Errors.isRetriable(Errors.ErrorCode.TOPIC_AUTHORIZATION_FAILED)).toBe(false)
    expect(Errors.isRetriable(Errors.ErrorCode.REBALANCE_IN_PROGRESS)).toBe(false)
    expect(Errors.isRetriable(9999)).toBe(false)
  })

  it("gives messages, with a fallback for unknown codes", () => {
    expect(Errors.message(Errors.ErrorCode.READ_ONLY_TOPIC)).toBe("The topic is read-only.")
    expect(Errors.message(9999)).toBe("error 9999")
  })
})
