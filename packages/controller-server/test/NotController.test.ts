import { ControllerChannel } from "@clustermirror/network"
import { Api, Errors, Spec } from "@clustermirror/protocol"
import { Either } from "effect"
import { describe, expect, it } from "vitest"
import * as NotController from "../src/NotController.js"

/** One item in each list a refusal echoes, so that the per-item answers carry the code. */
const SAMPLES: Record<string, Record<string, unknown>> = {
  CreateTopics: { topics: [{ name: "t", numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }] },
  DeleteTopics: { topicNames: ["t"], topics: [] },
  CreatePartitions: { topics: [{ name: "t", count: 2, assignments: null }] },
  IncrementalAlterConfigs: { resources: [{ resourceType: 2, resourceName: "t", configs: [] }] },
  AlterConfigs: { resources: [{ resourceType: 2, resourceName: "t", configs: [] }] },
  AlterUserScramCredentials: {
    deletions: [{ name: "alice", mechanism: 1 }],
    upsertions: [
      { name: "alice", mechanism: 2, iterations: 4096, salt: Buffer.alloc(0), saltedPassword: Buffer.alloc(0) }
    ]
  },
  CreateAcls: { creations: [{}] },
  DeleteAcls: { filters: [{}] },
  ElectLeaders: { topicPartitions: [{ topic: "t", partitions: [0] }] },
  AlterClientQuotas: { entries: [{ entity: [{ entityType: "user", entityName: "alice" }], ops: [] }] }
}

const requestOf = (api: Api.ApiDef): Record<string, unknown> => ({
  ...Spec.defaultStruct(api.request.fields),
  ...SAMPLES[api.name]
})

describe("NotController", () => {
  it("answers every controller API at every version with NOT_CONTROLLER where brokers and clients look", () => {
    for (const { api, refuse } of NotController.REFUSALS) {
      const body = refuse(requestOf(api) as never, "controller 2 is the active controller")
      for (let v = api.minVersion; v <= api.maxVersion; v++) {
        const chunks = Api.encodeResponseChunks(api, v, 7, body)
        if (Either.isLeft(chunks)) throw new Error(`${api.name} v${v}: ${chunks.left.message}`)
        const frame = Buffer.concat(chunks.right).subarray(4)
        const decoded = Api.decodeResponse(api, v, frame)
        if (Either.isLeft(decoded)) throw new Error(`${api.name} v${v}: ${decoded.left.message}`)
        expect(ControllerChannel.refusesAsNotController(api.key, decoded.right.body), `${api.name} v${v}`).toBe(true)
      }
    }
  })

  it("echoes each topic, resource, user and entry of the request", () => {
    const by = new Map(NotController.REFUSALS.map((r) => [r.api.name, r]))
    const refused = (name: string) => {
      const r = by.get(name)!
      return r.refuse(requestOf(r.api) as never, "not active") as Record<string, ReadonlyArray<Record<string, unknown>>>
    }
    expect(refused("CreateTopics").topics).toEqual([
      { name: "t", errorCode: Errors.ErrorCode.NOT_CONTROLLER, errorMessage: "not active" }
    ])
    expect(refused("AlterUserScramCredentials").results?.map((r) => r.user)).toEqual(["alice"])
    expect(refused("AlterClientQuotas").entries?.[0]?.entity).toEqual([{ entityType: "user", entityName: "alice" }])
  })

  it("takes only NOT_CONTROLLER failures as 'not the active controller'", () => {
    expect(NotController.isNotController(new NotController.NoActiveController({ message: "m", leaderId: 2 }))).toBe(
      true
    )
    expect(NotController.isNotController({ errorCode: Errors.ErrorCode.NOT_CONTROLLER, message: "" })).toBe(true)
    expect(NotController.isNotController({ errorCode: Errors.ErrorCode.INVALID_REQUEST, message: "" })).toBe(false)
    expect(NotController.isNotController(new Error("boom"))).toBe(false)
  })
})

describe("ControllerChannel.refusesAsNotController", () => {
  it("sees NOT_CONTROLLER nested in an answer, and a metadata fetch refused by a non-leader", () => {
    expect(ControllerChannel.refusesAsNotController(62, { errorCode: 0, brokerEpoch: 5n })).toBe(false)
    expect(ControllerChannel.refusesAsNotController(19, { topics: [{ name: "a", errorCode: 36 }] })).toBe(false)
    expect(ControllerChannel.refusesAsNotController(19, { topics: [{ name: "a", errorCode: 41 }] })).toBe(true)
    const fetch = (errorCode: number) => ({
      errorCode: 0,
      responses: [{ partitions: [{ errorCode, records: Buffer.alloc(3) }] }]
    })
    expect(ControllerChannel.refusesAsNotController(1, fetch(6))).toBe(true)
    expect(ControllerChannel.refusesAsNotController(1, fetch(0))).toBe(false)
  })
})
