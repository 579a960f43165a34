import { Errors } from "@clustermirror/protocol"
import { describe, expect, it } from "@effect/vitest"
import * as ClientError from "../src/ClientError.js"

describe("ClientError", () => {
  it("names Kafka error codes and knows which are retriable", () => {
    const notLeader = new ClientError.KafkaError({
      errorCode: Errors.ErrorCode.NOT_LEADER_OR_FOLLOWER,
      errorMessage: null,
      context: "Produce t-0"
    })
    expect(notLeader.errorName).toBe("NOT_LEADER_OR_FOLLOWER")
    expect(ClientError.isRetriable(notLeader)).toBe(true)
    expect(notLeader.message).toBe("Produce t-0: NOT_LEADER_OR_FOLLOWER")
    const tooLarge = new ClientError.KafkaError({
      errorCode: Errors.ErrorCode.MESSAGE_TOO_LARGE,
      errorMessage: "big",
      context: "Produce"
    })
    expect(ClientError.isRetriable(tooLarge)).toBe(false)
  })

  it("recognises its own errors and nothing else", () => {
    const unsupported = new ClientError.UnsupportedVersion({
      api: "Fetch",
      apiKey: 1,
      ours: { min: 4, max: 19 },
      theirs: { min: 0, max: 3 }
    })
    expect(ClientError.isClientError(unsupported)).toBe(true)
    expect(ClientError.isRetriable(unsupported)).toBe(false)
    expect(unsupported.message).toBe("Fetch (key 1): we speak 4-19, the broker 0-3")
    const invalid = new ClientError.InvalidRequest({ api: "CreateClusterMirror", field: "mirrorName", reason: "null" })
    expect(ClientError.isClientError(invalid)).toBe(true)
    expect(ClientError.isRetriable(invalid)).toBe(false)
    expect(invalid.message).toBe("CreateClusterMirror: invalid field mirrorName: null")
    expect(ClientError.isClientError(new Error("x"))).toBe(false)
    expect(ClientError.isClientError({ _tag: "KafkaError" })).toBe(false)
  })
})
