/**
 * The SASL settings of a listener and of this broker's own connections, from Kafka's broker configs:
 * `sasl.enabled.mechanisms` (or `listener.name.<l>.sasl.enabled.mechanisms`), the JAAS entry per
 * listener and mechanism (`listener.name.<l>.<mechanism>.sasl.jaas.config`; PLAIN's users are its
 * `user_<name>` options), `sasl.mechanism.inter.broker.protocol`, `sasl.mechanism.controller.protocol`,
 * `sasl.mechanism.mirror.admin.protocol` and `connections.max.reauth.ms`. Errors name the key; none quotes a value (they hold passwords).
 */
import * as Jaas from "./Jaas.js"

/** The parts of a broker's config SASL reads (a `BrokerConfig` is one). */
export interface BrokerConfig {
  readonly saslEnabledMechanisms: ReadonlyArray<string>
  readonly saslMechanismInterBrokerProtocol: string
  readonly saslMechanismControllerProtocol: string
  /** Null: `saslMechanismInterBrokerProtocol`. */
  readonly saslMechanismMirrorAdminProtocol: string | null
  readonly connectionsMaxReauthMs: number
  /** The properties, for the per-listener keys. */
  readonly properties: ReadonlyMap<string, string>
}

export type Mechanism = "PLAIN" | "SCRAM-SHA-256" | "SCRAM-SHA-512"

const MECHANISMS: ReadonlyArray<Mechanism> = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]

/** Whether a mechanism name is one this broker supports. */
export const isMechanism = (m: string): m is Mechanism => (MECHANISMS as ReadonlyArray<string>).includes(m)

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

/** The keys naming a mechanism this broker authenticates with. */
export type MechanismKey =
  | "sasl.mechanism.inter.broker.protocol"
  | "sasl.mechanism.controller.protocol"
  | "sasl.mechanism.mirror.admin.protocol"

/** The mechanism a key names: `sasl.mechanism.mirror.admin.protocol` unset is the inter-broker one. */
const mechanismOf = (config: BrokerConfig, key: MechanismKey): string =>
  key === "sasl.mechanism.controller.protocol"
    ? config.saslMechanismControllerProtocol
    : key === "sasl.mechanism.mirror.admin.protocol"
      ? (config.saslMechanismMirrorAdminProtocol ?? config.saslMechanismInterBrokerProtocol)
      : config.saslMechanismInterBrokerProtocol

/** How errors name a mechanism key: an unset mirror admin mechanism says whose value it took. */
export const mechanismKeyLabel = (config: BrokerConfig, key: MechanismKey): string =>
  key === "sasl.mechanism.mirror.admin.protocol" && config.saslMechanismMirrorAdminProtocol === null
    ? `${key} (unset: sasl.mechanism.inter.broker.protocol)`
    : key

/**
 * How this broker authenticates on a connection to a SASL listener: the mechanism of `mechanismKey`
 * (`sasl.mechanism.inter.broker.protocol`, `sasl.mechanism.controller.protocol` or, for the mirrors'
 * destination admin, `sasl.mechanism.mirror.admin.protocol`) with the `username` and `password` of the
 * listener's JAAS entry for it, as Kafka does.
 */
export const clientCredentials = (
  config: BrokerConfig,
  listenerName: string,
  mechanismKey: MechanismKey
): { readonly mechanism: Mechanism; readonly username: string; readonly password: string } => {
  const name = mechanismOf(config, mechanismKey)
  const label = mechanismKeyLabel(config, mechanismKey)
  const mechanism = isMechanism(name) ? name : refuseMechanism(label, name)
  const jaas = jaasOf(config, listenerName, mechanism)
  const creds = jaas === undefined ? null : Jaas.clientCredentials(jaas)
  if (creds === null)
    throw new Error(
      `${jaasKey(listenerName, mechanism)}: ${label}=${mechanism} needs username and password in the listener's JAAS entry`
    )
  return { mechanism, ...creds }
}

/** A SCRAM credential the controller writes when it creates a new metadata log (`--add-scram`). */
export interface BootstrapScramCredential {
  readonly mechanism: "SCRAM-SHA-256" | "SCRAM-SHA-512"
  readonly name: string
  readonly password: string
  readonly iterations: number
}

/**
 * Kafka's `kafka-storage format --add-scram` syntax: `SCRAM-SHA-512=[name=admin,password=admin-secret]`,
 * optionally with `iterations=8192` (default 4096). Values may be double-quoted. Errors never quote the
 * password.
 */
export const parseAddScram = (text: string): BootstrapScramCredential => {
  const m = /^(SCRAM-SHA-256|SCRAM-SHA-512)=\[(.*)\]$/s.exec(text.trim())
  if (m === null)
    throw new Error(
      "--add-scram: expected SCRAM-SHA-256=[name=<user>,password=<password>] or SCRAM-SHA-512=[...], optionally with iterations=<n>"
    )
  const fields = new Map<string, string>()
  for (const part of m[2]!.split(",")) {
    const eq = part.indexOf("=")
    if (eq <= 0) throw new Error(`--add-scram ${m[1]}: expected key=value entries`)
    const key = part.slice(0, eq).trim()
    const raw = part.slice(eq + 1).trim()
    fields.set(key, raw.startsWith('"') && raw.endsWith('"') && raw.length >= 2 ? raw.slice(1, -1) : raw)
  }
  for (const key of fields.keys())
    if (key !== "name" && key !== "password" && key !== "iterations")
      throw new Error(`--add-scram ${m[1]}: ${key} is not supported (name, password, iterations)`)
  const name = fields.get("name")
  const password = fields.get("password")
  if (name === undefined || name === "") throw new Error(`--add-scram ${m[1]}: name is required`)
  if (password === undefined || password === "")
    throw new Error(`--add-scram ${m[1]} for ${name}: password is required`)
  const iterations = Number(fields.get("iterations") ?? "4096")
  if (!Number.isInteger(iterations) || iterations < 4096 || iterations > 16384)
    throw new Error(`--add-scram ${m[1]} for ${name}: iterations must be an integer from 4096 to 16384`)
  return { mechanism: m[1] as BootstrapScramCredential["mechanism"], name, password, iterations }
}
