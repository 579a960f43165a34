/**
 * The SASL settings of a listener and of this broker's own connections, from Kafka's broker configs:
 * `sasl.enabled.mechanisms` (or `listener.name.<l>.sasl.enabled.mechanisms`), the JAAS entry per
 * listener and mechanism (`listener.name.<l>.<mechanism>.sasl.jaas.config`; PLAIN's users are its
 * `user_<name>` options), `sasl.mechanism.inter.broker.protocol`, `sasl.mechanism.controller.protocol`
 * and `connections.max.reauth.ms`. Errors name the key; none quotes a value (they hold passwords).
 */
import type { BrokerConfig } from "./BrokerConfig.js"
import * as Jaas from "./Jaas.js"

export type Mechanism = "PLAIN" | "SCRAM-SHA-256" | "SCRAM-SHA-512"

const MECHANISMS: ReadonlyArray<Mechanism> = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]

const isMechanism = (m: string): m is Mechanism => (MECHANISMS as ReadonlyArray<string>).includes(m)

const refuseMechanism = (key: string, m: string): never => {
  throw new Error(
    `${key}: SASL mechanism ${m} is not supported (supported: ${MECHANISMS.join(", ")})${
      m === "GSSAPI" ? "; GSSAPI is Kafka's default, set the key to the mechanisms you use" : ""
    }`
  )
}

export interface ListenerSasl {
  readonly listenerName: string
  readonly enabledMechanisms: ReadonlyArray<Mechanism>
  /** PLAIN's users (name → password), from the listener's PlainLoginModule entry. */
  readonly plainUsers: ReadonlyMap<string, string>
  /** `connections.max.reauth.ms`. */
  readonly maxReauthMs: number
}

const jaasKey = (listenerName: string, mechanism: Mechanism) =>
  `listener.name.${listenerName.toLowerCase()}.${mechanism.toLowerCase()}.sasl.jaas.config`

const jaasOf = (config: BrokerConfig, listenerName: string, mechanism: Mechanism): Jaas.JaasConfig | undefined => {
  const key = jaasKey(listenerName, mechanism)
  const text = config.properties.get(key)
  if (text === undefined) return undefined
  const jaas = Jaas.parse(text, key)
  const expected = mechanism === "PLAIN" ? Jaas.PLAIN_LOGIN_MODULE : Jaas.SCRAM_LOGIN_MODULE
  if (jaas.loginModule !== expected) throw new Error(`${key}: ${mechanism} takes ${expected}, not ${jaas.loginModule}`)
  return jaas
}

/** The SASL settings of a SASL listener; throws an Error naming the key when they are incomplete. */
export const forListener = (config: BrokerConfig, listenerName: string): ListenerSasl => {
  const perListenerKey = `listener.name.${listenerName.toLowerCase()}.sasl.enabled.mechanisms`
  const own = config.properties.get(perListenerKey)
  const key = own === undefined ? "sasl.enabled.mechanisms" : perListenerKey
  const names =
    own === undefined
      ? config.saslEnabledMechanisms
      : own
          .split(",")
          .map((x) => x.trim())
          .filter((x) => x !== "")
  if (names.length === 0) throw new Error(`${key}: a SASL listener (${listenerName}) needs at least one mechanism`)
  const enabled = names.map((m) => (isMechanism(m) ? m : refuseMechanism(key, m)))
  let plainUsers: ReadonlyMap<string, string> = new Map()
  if (enabled.includes("PLAIN")) {
    const jaas = jaasOf(config, listenerName, "PLAIN")
    if (jaas === undefined)
      throw new Error(`${jaasKey(listenerName, "PLAIN")}: PLAIN on listener ${listenerName} needs its JAAS entry`)
    plainUsers = Jaas.plainUsers(jaas)
  }
  return { listenerName, enabledMechanisms: enabled, plainUsers, maxReauthMs: config.connectionsMaxReauthMs }
}

/**
 * How this broker authenticates on a connection to a SASL listener: the mechanism of `mechanismKey`
 * (`sasl.mechanism.inter.broker.protocol` or `sasl.mechanism.controller.protocol`) with the `username`
 * and `password` of the listener's JAAS entry for it, as Kafka does.
 */
export const clientCredentials = (
  config: BrokerConfig,
  listenerName: string,
  mechanismKey: "sasl.mechanism.inter.broker.protocol" | "sasl.mechanism.controller.protocol"
): { readonly mechanism: Mechanism; readonly username: string; readonly password: string } => {
  const name =
    mechanismKey === "sasl.mechanism.inter.broker.protocol"
      ? config.saslMechanismInterBrokerProtocol
      : config.saslMechanismControllerProtocol
  const mechanism = isMechanism(name) ? name : refuseMechanism(mechanismKey, name)
  const jaas = jaasOf(config, listenerName, mechanism)
  const creds = jaas === undefined ? null : Jaas.clientCredentials(jaas)
  if (creds === null)
    throw new Error(
      `${jaasKey(listenerName, mechanism)}: ${mechanismKey}=${mechanism} needs username and password in the listener's JAAS entry`
    )
  return { mechanism, ...creds }
}
