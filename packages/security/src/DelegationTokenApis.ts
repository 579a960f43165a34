/**
 * Delegation tokens (CreateDelegationToken 38, RenewDelegationToken 39, ExpireDelegationToken 40,
 * DescribeDelegationToken 41) on a cluster without them: answered as Apache Kafka answers them when
 * `delegation.token.secret.key` is not set, so that clients and `kafka-delegation-tokens` fail with Kafka's
 * error. It must not issue, store or accept a token.
 *
 * Kafka checks the channel first: on PLAINTEXT, on SSL without a client certificate (the principal is
 * `User:ANONYMOUS`) and on a token-authenticated connection, token requests are not allowed
 * (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED); elsewhere (SASL, mutual TLS) the feature is off
 * (DELEGATION_TOKEN_AUTH_DISABLED).
 */
import {
  CreateDelegationToken,
  DescribeDelegationToken,
  Errors,
  ExpireDelegationToken,
  RenewDelegationToken
} from "@clustermirror/protocol"
import type { Handlers, RequestContext } from "@clustermirror/network/RequestChannel"

const ANONYMOUS = "User:ANONYMOUS"

/** The error every token request gets on `connection`. */
export const refusal = (connection: RequestContext["connection"]): number =>
  connection.securityProtocol === "PLAINTEXT" ||
  (connection.securityProtocol === "SSL" && connection.principal === ANONYMOUS)
    ? Errors.ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
    : Errors.ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED

/** `User:alice` → `["User", "alice"]`, as a token response names its owner. */
const principalParts = (principal: string): readonly [string, string] => {
  const i = principal.indexOf(":")
  return i < 0 ? ["User", principal] : [principal.slice(0, i), principal.slice(i + 1)]
}

export const register = (handlers: Handlers): Handlers =>
  handlers
    .register(CreateDelegationToken.api, (ctx, request) => {
      const [requesterType, requesterName] = principalParts(ctx.connection.principal)
      return {
        errorCode: refusal(ctx.connection),
        principalType: request.ownerPrincipalType ?? requesterType,
        principalName: request.ownerPrincipalName ?? requesterName,
        tokenRequesterPrincipalType: requesterType,
        tokenRequesterPrincipalName: requesterName,
        issueTimestampMs: -1n,
        expiryTimestampMs: -1n,
        maxTimestampMs: -1n,
        tokenId: "",
        hmac: Buffer.alloc(0),
        throttleTimeMs: 0
      }
    })
    .register(RenewDelegationToken.api, (ctx) => ({
      errorCode: refusal(ctx.connection),
      expiryTimestampMs: -1n,
      throttleTimeMs: 0
    }))
    .register(ExpireDelegationToken.api, (ctx) => ({
      errorCode: refusal(ctx.connection),
      expiryTimestampMs: -1n,
      throttleTimeMs: 0
    }))
    .register(DescribeDelegationToken.api, (ctx) => ({
      errorCode: refusal(ctx.connection),
      tokens: [],
      throttleTimeMs: 0
    }))
