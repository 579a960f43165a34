/**
 * @clustermirror/security: the security of a node's request path: per-RPC authorization (Kafka's rules and
 * KIP-1279 §8.2), the ACL and SCRAM credential APIs, and the listeners' TLS and SASL socket options.
 */
export * as AclApis from "./AclApis.js"
export * as Authorization from "./Authorization.js"
export * as Listeners from "./Listeners.js"
export * as ScramApis from "./ScramApis.js"
export * as ClientQuotaApis from "./ClientQuotaApis.js"
export * as DelegationTokenApis from "./DelegationTokenApis.js"
export * as DescribeTopicPartitionsApi from "./DescribeTopicPartitionsApi.js"
