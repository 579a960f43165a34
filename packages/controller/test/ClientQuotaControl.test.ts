import { describe, expect, it } from "@effect/vitest"
import { MetadataLog } from "@clustermirror/metadata-log"
import { Errors, MetadataRecords } from "@clustermirror/protocol"
import { Effect } from "effect"
import * as fc from "fast-check"
import * as ClientQuotaControl from "../src/ClientQuotaControl.js"
import { bootstrap, given } from "../src/ControllerTest.js"
import { QuorumController } from "../src/QuorumController.js"
import { CLUSTER_ID } from "./clusterFixtures.js"

const E = Errors.ErrorCode
type Part = { entityType: string; entityName: string | null }
const user = (name: string | null): Part => ({ entityType: "user", entityName: name })
const client = (name: string | null): Part => ({ entityType: "client-id", entityName: name })

const op = (key: string, value: number, remove = false) => ({ key, value, remove })
const request = (entries: Array<{ entity: Part[]; ops: ReturnType<typeof op>[] }>, validateOnly = false) => ({
  entries,
  validateOnly
})
const ok = (entity: Part[]) => ({ errorCode: E.NONE, errorMessage: null, entity })
const refused = (entity: Part[], errorMessage: string) => ({ errorCode: E.INVALID_REQUEST, errorMessage, entity })
const quotaRecord = (entity: Part[], key: string, value: number, remove = false) =>
  MetadataRecords.make("ClientQuotaRecord", { entity, key, value, remove })

const alter = (req: ReturnType<typeof request>, records: MetadataRecords.MetadataRecord[] = []) =>
  given([...bootstrap, ...records]).when((s) => ClientQuotaControl.alterClientQuotas(s.clientQuotas, req))

describe("ClientQuotaControl.alterClientQuotas", () => {
  it("stores a set quota as a ClientQuotaRecord with the entity's parts in type order", () => {
    const entity = [user("alice"), client("q1")]
    const after = alter(
      request([{ entity, ops: [op("producer_byte_rate", 50_000), op("consumer_byte_rate", 20_000)] }])
    ).then(
      [
        quotaRecord([client("q1"), user("alice")], "producer_byte_rate", 50_000),
        quotaRecord([client("q1"), user("alice")], "consumer_byte_rate", 20_000)
      ],
      [ok(entity)]
    )
    expect(ClientQuotaControl.quotasOf(after.state.clientQuotas, [client("q1"), user("alice")])).toEqual(
      new Map([
        ["producer_byte_rate", 50_000],
        ["consumer_byte_rate", 20_000]
      ])
    )
  })

  it("emits nothing for an unchanged value or the removal of an absent key; removes a present one", () => {
    const set = quotaRecord([client(null)], "producer_byte_rate", 1024)
    const after = alter(
      request([{ entity: [client(null)], ops: [op("producer_byte_rate", 1024), op("consumer_byte_rate", 0, true)] }]),
      [set]
    ).then([], [ok([client(null)])])
    const removed = after
      .when((s) =>
        ClientQuotaControl.alterClientQuotas(
          s.clientQuotas,
          request([{ entity: [client(null)], ops: [op("producer_byte_rate", 0, true)] }])
        )
      )
      .then([quotaRecord([client(null)], "producer_byte_rate", 0, true)], [ok([client(null)])])
    expect(removed.state.clientQuotas.entities.size).toBe(0)
  })

  it("validateOnly answers the same and writes nothing", () => {
    const entity = [user(null)]
    alter(request([{ entity, ops: [op("consumer_byte_rate", 10)] }], true)).then([], [ok(entity)])
  })

  it("validates keys and values as Kafka, naming the key; the entry applies nothing", () => {
    const u = [user("u")]
    const problem = (entity: Part[], ...ops: ReturnType<typeof op>[]) =>
      alter(request([{ entity, ops }])).outcome().response[0]!.errorMessage
    expect(problem([], op("producer_byte_rate", 1))).toBe("Invalid empty client quota entity")
    expect(problem([{ entityType: "group", entityName: "g" }], op("producer_byte_rate", 1))).toBe(
      "Unhandled client quota entity type: group"
    )
    expect(problem([{ entityType: "ip", entityName: "nope" }], op("connection_creation_rate", 1))).toBe(
      "nope is not a valid IP or resolvable host."
    )
    expect(problem([...u, { entityType: "ip", entityName: "1.2.3.4" }], op("connection_creation_rate", 1))).toBe(
      "Invalid quota entity combination, IP entity should not be combined with User or ClientId"
    )
    expect(problem(u, op("connection_creation_rate", 1))).toBe("Invalid configuration key connection_creation_rate")
    expect(problem(u, op("producer_byte_rate", -5))).toBe("Quota producer_byte_rate must be greater than 0")
    expect(problem(u, op("producer_byte_rate", 1.5))).toBe("Configuration producer_byte_rate must be a Long value")
    expect(problem(u, op("producer_byte_rate", 1), op("producer_byte_rate", 2))).toBe(
      "Duplicate quota key producer_byte_rate in a client quota entry"
    )
    const ip = [{ entityType: "ip", entityName: "1.2.3.4" }]
    for (const key of ["request_percentage", "controller_mutation_rate"]) {
      expect(problem(u, op(key, 0))).toBe(`Quota ${key} must be greater than 0`)
      expect(problem(ip, op(key, 10))).toBe(`Invalid configuration key ${key}`)
    }
    expect(problem(ip, op("connection_creation_rate", 0))).toBe("Quota connection_creation_rate must be greater than 0")
    expect(problem(ip, op("connection_creation_rate", 2.5))).toBe(
      "connection_creation_rate cannot be a fractional value."
    )
    expect(problem(ip, op("connection_creation_rate", 2 ** 31))).toBe(
      "Proposed value for connection_creation_rate is too large for an INT."
    )
    expect(problem([{ entityType: "ip", entityName: null }], op("producer_byte_rate", 10))).toBe(
      "Invalid configuration key producer_byte_rate"
    )
    // One bad operation refuses the whole entry; the next entry still applies.
    alter(
      request([
        { entity: u, ops: [op("producer_byte_rate", 100), op("request_percentage", -1)] },
        { entity: [client("c")], ops: [op("producer_byte_rate", 100)] }
      ])
    ).then(
      [quotaRecord([client("c")], "producer_byte_rate", 100)],
      [refused(u, "Quota request_percentage must be greater than 0"), ok([client("c")])]
    )
  })

  it("stores request_percentage and controller_mutation_rate (doubles) and connection_creation_rate for IPs and the default IP", () => {
    const u = [user("u")]
    const ip = [{ entityType: "ip", entityName: "10.0.0.1" }]
    const defaultIp = [{ entityType: "ip", entityName: null }]
    alter(
      request([
        { entity: u, ops: [op("request_percentage", 12.5), op("controller_mutation_rate", 0.5)] },
        { entity: ip, ops: [op("connection_creation_rate", 2)] },
        { entity: defaultIp, ops: [op("connection_creation_rate", 100)] }
      ])
    ).then(
      [
        quotaRecord(u, "request_percentage", 12.5),
        quotaRecord(u, "controller_mutation_rate", 0.5),
        quotaRecord(ip, "connection_creation_rate", 2),
        quotaRecord(defaultIp, "connection_creation_rate", 100)
      ],
      [ok(u), ok(ip), ok(defaultIp)]
    )
  })

  it("decide then replay never dies, and replay gives what the entries asked", () => {
    const change = fc.record({
      entity: fc.constantFrom([user("a")], [client("c")], [user(null), client("c")], [client(null)]),
      key: fc.constantFrom("producer_byte_rate", "consumer_byte_rate"),
      value: fc.option(fc.integer({ min: 1, max: 10_000 }), { nil: null })
    })
    fc.assert(
      fc.property(fc.array(change, { maxLength: 12 }), (changes) => {
        let g = given(bootstrap)
        const expected = new Map<string, Map<string, number>>()
        for (const c of changes) {
          const req = request([{ entity: [...c.entity], ops: [op(c.key, c.value ?? 0, c.value === null)] }])
          g = g.when((s) => ClientQuotaControl.alterClientQuotas(s.clientQuotas, req)).outcome().after
          const k = JSON.stringify(c.entity)
          const m = expected.get(k) ?? new Map<string, number>()
          if (c.value === null) m.delete(c.key)
          else m.set(c.key, c.value)
          expected.set(k, m)
        }
        for (const [k, m] of expected)
          expect(ClientQuotaControl.quotasOf(g.state.clientQuotas, JSON.parse(k) as Part[])).toEqual(m)
      }),
      { numRuns: 100 }
    )
  })
})

describe("QuorumController client quotas across restarts", () => {
  const populate = async (c: QuorumController) => {
    const r = await c.alterClientQuotas(
      request([
        { entity: [client("q1")], ops: [op("producer_byte_rate", 50_000)] },
        { entity: [user(null)], ops: [op("consumer_byte_rate", 30_000), op("producer_byte_rate", 1)] }
      ])
    )
    expect(r).toEqual([ok([client("q1")]), ok([user(null)])])
    await c.alterClientQuotas(request([{ entity: [user(null)], ops: [op("producer_byte_rate", 0, true)] }]))
  }
  const expectQuotas = (c: QuorumController) => {
    expect(ClientQuotaControl.quotasOf(c.current.clientQuotas, [client("q1")])).toEqual(
      new Map([["producer_byte_rate", 50_000]])
    )
    expect(ClientQuotaControl.quotasOf(c.current.clientQuotas, [user(null)])).toEqual(
      new Map([["consumer_byte_rate", 30_000]])
    )
    expect(c.current.clientQuotas.entities.size).toBe(2)
  }

  it("a controller reopened from its snapshot has the quotas", async () => {
    const log = MetadataLog.makeMemory()
    const first = await QuorumController.open({ nodeId: 1000, clusterId: CLUSTER_ID, log })
    await populate(first)
    expectQuotas(first)
    await first.close()
    expect((await Effect.runPromise(log.latestSnapshot))._tag).toBe("Some")
    const second = await QuorumController.open({ nodeId: 1000, clusterId: CLUSTER_ID, log })
    try {
      expectQuotas(second)
    } finally {
      await second.close()
    }
  })
})
