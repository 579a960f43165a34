import { describe, expect, it } from "vitest"
import { Errors } from "@clustermirror/protocol"
import * as DelegationTokenApis from "../src/DelegationTokenApis.js"

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
