import { describe, expect, it } from "vitest"
import { Errors } from "@clustermirror/protocol"
import * as ClientQuotaApis from "../src/ClientQuotaApis.js"
import * as DelegationTokenApis from "../src/DelegationTokenApis.js"

const alter = (
  entity: Array<{ entityType: string; entityName: string | null }>,
  key: string,
  value: number,
  remove = false
) =>
  ClientQuotaApis.alterClientQuotas({ entries: [{ entity, ops: [{ key, value, remove }] }], validateOnly: false })
    .entries[0]!

describe("ClientQuotaApis.alterClientQuotas", () => {
  it("validates entities, keys and values as Kafka, then refuses every quota it would store", () => {
    const user = [{ entityType: "user", entityName: "u" }]
    expect(alter([], "producer_byte_rate", 1).errorMessage).toBe("Invalid empty client quota entity")
    expect(alter([{ entityType: "group", entityName: "g" }], "producer_byte_rate", 1).errorMessage).toBe(
      "Unhandled client quota entity type: group"
    )
    expect(alter([{ entityType: "ip", entityName: "nope" }], "connection_creation_rate", 1).errorMessage).toBe(
      "nope is not a valid IP or resolvable host."
    )
    expect(
      alter([...user, { entityType: "ip", entityName: "1.2.3.4" }], "connection_creation_rate", 1).errorMessage
    ).toBe("Invalid quota entity combination, IP entity should not be combined with User or ClientId")
    expect(alter(user, "connection_creation_rate", 1).errorMessage).toBe(
      "Invalid configuration key connection_creation_rate"
    )
    expect(alter(user, "producer_byte_rate", -5).errorMessage).toBe("Quota producer_byte_rate must be greater than 0")
    expect(alter(user, "producer_byte_rate", 1.5).errorMessage).toBe(
      "Configuration producer_byte_rate must be a Long value"
    )
    const refused = alter(user, "producer_byte_rate", 1024)
    expect(refused.errorCode).toBe(Errors.ErrorCode.INVALID_REQUEST)
    expect(refused.errorMessage).toContain("Quota producer_byte_rate is not enforced")
    expect(alter(user, "producer_byte_rate", 0, true)).toEqual({ errorCode: 0, errorMessage: null, entity: user })
  })
})

describe("DelegationTokenApis.refusal", () => {
  const conn = (securityProtocol: "PLAINTEXT" | "SSL" | "SASL_PLAINTEXT" | "SASL_SSL", principal: string) => ({
    id: 1,
    remoteHost: "127.0.0.1",
    remotePort: 1,
    listenerName: "L",
    securityProtocol,
    principal
  })
  it("is REQUEST_NOT_ALLOWED on PLAINTEXT and 1-way SSL, AUTH_DISABLED on SASL and mutual TLS", () => {
    const E = Errors.ErrorCode
    expect(DelegationTokenApis.refusal(conn("PLAINTEXT", "User:ANONYMOUS"))).toBe(
      E.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
    )
    expect(DelegationTokenApis.refusal(conn("SSL", "User:ANONYMOUS"))).toBe(E.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED)
    expect(DelegationTokenApis.refusal(conn("SSL", "User:CN=client"))).toBe(E.DELEGATION_TOKEN_AUTH_DISABLED)
    expect(DelegationTokenApis.refusal(conn("SASL_SSL", "User:alice"))).toBe(E.DELEGATION_TOKEN_AUTH_DISABLED)
  })
})
