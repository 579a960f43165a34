/**
 * A listener's TLS settings from Kafka's `ssl.*` broker configs, each overridable per listener by
 * `listener.name.<lower-case name>.ssl.*`, and the Node `tls` options they give: a server context for the
 * listener, and client options for the broker's own connections over it (to other brokers and to the
 * controller). Values are checked when the config is parsed (`settingsFor`); key and trust material
 * is read from files when a listener starts (`serverOptions`, `clientOptions`), so a missing file fails
 * the start with its name. Password-type values never appear in a message.
 */
import * as fs from "node:fs"
import * as tls from "node:tls"
import { Pkcs12 } from "@clustermirror/client"
import { Either } from "effect"
import * as PrincipalMapping from "./PrincipalMapping.js"

/** Kafka's password-type ssl keys: their values are never shown. */
export const PASSWORD_KEYS: ReadonlySet<string> = new Set([
  "ssl.keystore.password",
  "ssl.key.password",
  "ssl.truststore.password",
  "ssl.keystore.key",
  "ssl.keystore.certificate.chain",
  "ssl.truststore.certificates"
])

/** The ssl keys we apply. */
export const KEYS: ReadonlySet<string> = new Set([
  ...PASSWORD_KEYS,
  "ssl.keystore.type",
  "ssl.keystore.location",
  "ssl.truststore.type",
  "ssl.truststore.location",
  "ssl.client.auth",
  "ssl.enabled.protocols",
  "ssl.protocol",
  "ssl.endpoint.identification.algorithm",
  "ssl.principal.mapping.rules",
  "ssl.cipher.suites"
])

/** Kafka ssl keys that configure Java's own TLS machinery: nothing in Node to apply them to. */
const JAVA_ONLY = new Set([
  "ssl.keymanager.algorithm",
  "ssl.trustmanager.algorithm",
  "ssl.secure.random.implementation",
  "ssl.provider",
  "ssl.engine.factory.class",
  "ssl.allow.dn.changes",
  "ssl.allow.san.changes"
])

/** Why an ssl key (without listener prefix) is refused, or null when it is applied. */
export const refusal = (key: string): string | null => {
  if (KEYS.has(key)) return null
  if (JAVA_ONLY.has(key)) return "it configures Java's TLS implementation; Node's TLS has no such setting"
  return "not a TLS setting clustermirror knows"
}

export type StoreType = "PEM" | "PKCS12"
export type ClientAuth = "none" | "requested" | "required"

export interface SslSettings {
  readonly listenerName: string
  /** `ssl.keystore.type`; null: inferred from the file (PEM text, else PKCS12). */
  readonly keystoreType: StoreType | null
  readonly keystoreLocation: string | null
  readonly keystorePassword: string | null
  readonly keyPassword: string | null
  readonly keystoreCertificateChain: string | null
  readonly keystoreKey: string | null
  readonly truststoreType: StoreType | null
  readonly truststoreLocation: string | null
  readonly truststorePassword: string | null
  readonly truststoreCertificates: string | null
  readonly clientAuth: ClientAuth
  readonly minVersion: tls.SecureVersion
  readonly maxVersion: tls.SecureVersion
  /** `ssl.endpoint.identification.algorithm=https` (Kafka's default): the broker checks its peers' host names. */
  readonly verifyHostname: boolean
  readonly principalMappingRules: ReadonlyArray<PrincipalMapping.Rule>
  readonly ciphers: string | null
}

const storeType = (key: string, v: string): StoreType => {
  const t = v.trim().toUpperCase()
  if (t === "JKS") throw new Error(`${key}=${v}: JKS keystores are not supported: use PEM or PKCS12`)
  if (t !== "PEM" && t !== "PKCS12") throw new Error(`${key}=${v}: expected PEM or PKCS12`)
  return t
}

const PROTOCOLS: ReadonlyArray<tls.SecureVersion> = ["TLSv1.2", "TLSv1.3"]

/**
 * The settings of `listenerName`: each ssl key's listener-prefixed value, else the broker-wide one.
 * Throws naming the key on a bad value (never showing a password-type one).
 */
export const settingsFor = (props: ReadonlyMap<string, string>, listenerName: string): SslSettings => {
  const prefix = `listener.name.${listenerName.toLowerCase()}.`
  const get = (key: string): string | null => props.get(prefix + key) ?? props.get(key) ?? null
  const keyOf = (key: string): string => (props.has(prefix + key) ? prefix + key : key)
  const typeOf = (key: string): StoreType | null => {
    const v = get(key)
    return v === null || v.trim() === "" ? null : storeType(keyOf(key), v)
  }
  const clientAuthValue = (get("ssl.client.auth") ?? "none").trim().toLowerCase()
  if (clientAuthValue !== "none" && clientAuthValue !== "requested" && clientAuthValue !== "required")
    throw new Error(`${keyOf("ssl.client.auth")}=${get("ssl.client.auth")}: expected none, requested or required`)
  const enabled = (get("ssl.enabled.protocols") ?? "TLSv1.2,TLSv1.3")
    .split(",")
    .map((p) => p.trim())
    .filter((p) => p !== "")
  for (const p of enabled)
    if (!PROTOCOLS.includes(p as tls.SecureVersion))
      throw new Error(
        `${keyOf("ssl.enabled.protocols")}=${enabled.join(",")}: ${p} is not supported: use TLSv1.2 and/or TLSv1.3`
      )
  if (enabled.length === 0) throw new Error(`${keyOf("ssl.enabled.protocols")}: no protocol enabled`)
  const protocol = (get("ssl.protocol") ?? "TLSv1.3").trim()
  if (protocol !== "TLS" && protocol !== "TLSv1.2" && protocol !== "TLSv1.3")
    throw new Error(`${keyOf("ssl.protocol")}=${protocol}: expected TLSv1.3, TLSv1.2 or TLS`)
  const versions = PROTOCOLS.filter((p) => enabled.includes(p) && (protocol !== "TLSv1.2" || p === "TLSv1.2"))
  if (versions.length === 0)
    throw new Error(`${keyOf("ssl.protocol")}=${protocol} allows none of ssl.enabled.protocols=${enabled.join(",")}`)
  const algorithm = (get("ssl.endpoint.identification.algorithm") ?? "https").trim().toLowerCase()
  if (algorithm !== "https" && algorithm !== "")
    throw new Error(`${keyOf("ssl.endpoint.identification.algorithm")}=${algorithm}: expected https or empty`)
  const rules = get("ssl.principal.mapping.rules")
  const settings: SslSettings = {
    listenerName,
    keystoreType: typeOf("ssl.keystore.type"),
    keystoreLocation: get("ssl.keystore.location")?.trim() || null,
    keystorePassword: get("ssl.keystore.password"),
    keyPassword: get("ssl.key.password"),
    keystoreCertificateChain: get("ssl.keystore.certificate.chain"),
    keystoreKey: get("ssl.keystore.key"),
    truststoreType: typeOf("ssl.truststore.type"),
    truststoreLocation: get("ssl.truststore.location")?.trim() || null,
    truststorePassword: get("ssl.truststore.password"),
    truststoreCertificates: get("ssl.truststore.certificates"),
    clientAuth: clientAuthValue,
    minVersion: versions[0]!,
    maxVersion: versions[versions.length - 1]!,
    verifyHostname: algorithm === "https",
    principalMappingRules: rules === null ? PrincipalMapping.DEFAULT_RULES : PrincipalMapping.parse(rules),
    ciphers: get("ssl.cipher.suites")?.trim() || null
  }
  if (settings.keystoreLocation !== null && (settings.keystoreCertificateChain ?? settings.keystoreKey) !== null)
    throw new Error(
      `${prefix}ssl.keystore.location and ssl.keystore.certificate.chain/ssl.keystore.key: set one or the other for listener ${listenerName}`
    )
  if ((settings.keystoreCertificateChain === null) !== (settings.keystoreKey === null))
    throw new Error(`ssl.keystore.certificate.chain and ssl.keystore.key go together (listener ${listenerName})`)
  if (settings.keystoreCertificateChain !== null && settings.keystoreType === "PKCS12")
    throw new Error(
      `ssl.keystore.certificate.chain and ssl.keystore.key need ssl.keystore.type=PEM (listener ${listenerName})`
    )
  if (settings.truststoreLocation !== null && settings.truststoreCertificates !== null)
    throw new Error(
      `ssl.truststore.location and ssl.truststore.certificates: set one or the other (listener ${listenerName})`
    )
  if (settings.truststoreCertificates !== null && settings.truststoreType === "PKCS12")
    throw new Error(`ssl.truststore.certificates needs ssl.truststore.type=PEM (listener ${listenerName})`)
  return settings
}

const readFile = (what: string, file: string, listenerName: string): Buffer => {
  try {
    return fs.readFileSync(file)
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code
    throw new Error(`listener ${listenerName}: cannot read ${what} ${file}${code === undefined ? "" : ` (${code})`}`)
  }
}

const isPemText = (b: Buffer): boolean => b.subarray(0, 4096).toString("latin1").includes("-----BEGIN")

/** Key and certificate chain: `key`/`cert` for PEM, `pfx` for PKCS12; none when no keystore is set. */
const keyMaterial = (s: SslSettings): tls.SecureContextOptions => {
  if (s.keystoreCertificateChain !== null && s.keystoreKey !== null)
    return {
      cert: s.keystoreCertificateChain,
      key: s.keystoreKey,
      ...(s.keyPassword === null ? {} : { passphrase: s.keyPassword })
    }
  if (s.keystoreLocation === null) return {}
  const data = readFile("keystore", s.keystoreLocation, s.listenerName)
  const type = s.keystoreType ?? (isPemText(data) ? "PEM" : "PKCS12")
  if (type === "PEM") {
    // One file holds the private key and the certificate chain, as Kafka's PEM keystore file does.
    const text = data.toString("utf8")
    return { cert: text, key: text, ...(s.keyPassword === null ? {} : { passphrase: s.keyPassword }) }
  }
  const passphrase = s.keystorePassword ?? s.keyPassword
  return { pfx: data, ...(passphrase === null ? {} : { passphrase }) }
}

const trustMaterial = (s: SslSettings): tls.SecureContextOptions => {
  if (s.truststoreCertificates !== null) return { ca: s.truststoreCertificates }
  if (s.truststoreLocation === null) return {}
  const data = readFile("truststore", s.truststoreLocation, s.listenerName)
  const type = s.truststoreType ?? (isPemText(data) ? "PEM" : "PKCS12")
  if (type === "PEM") return { ca: data.toString("utf8") }
  try {
    const ders = Pkcs12.certificates(data, s.truststorePassword)
    if (Either.isLeft(ders)) throw new Error(ders.left)
    if (ders.right.length === 0) throw new Error("it holds no certificates")
    return { ca: ders.right.map(Pkcs12.toPem) }
  } catch (e) {
    throw new Error(
      `listener ${s.listenerName}: PKCS12 truststore ${s.truststoreLocation} does not load: ${e instanceof Error ? e.message : String(e)}`
    )
  }
}

/** A short reason for a TLS failure of Node's, without any secret. */
const reasonOf = (e: unknown): string => {
  const m = e instanceof Error ? e.message : String(e)
  if (/mac verify failure|bad decrypt|BAD_DECRYPT/i.test(m)) return "wrong password or corrupt file"
  return m
}

/** Checks that Node builds a secure context from the options, naming the listener (never a secret). */
const checked = <T extends tls.SecureContextOptions>(s: SslSettings, options: T): T => {
  try {
    tls.createSecureContext(options)
  } catch (e) {
    throw new Error(`listener ${s.listenerName}: TLS settings do not load: ${reasonOf(e)}`)
  }
  return options
}

/** The server options of an SSL listener; throws when a file is missing or the key does not load. */
export const serverOptions = (s: SslSettings): tls.TlsOptions => {
  const key = keyMaterial(s)
  if (key.cert === undefined && key.pfx === undefined)
    throw new Error(
      `listener ${s.listenerName} is SSL but has no keystore: set ssl.keystore.location (or ssl.keystore.certificate.chain and ssl.keystore.key)`
    )
  const options: tls.TlsOptions = {
    ...key,
    ...trustMaterial(s),
    minVersion: s.minVersion,
    maxVersion: s.maxVersion,
    ...(s.ciphers === null ? {} : { ciphers: s.ciphers }),
    requestCert: s.clientAuth !== "none",
    rejectUnauthorized: s.clientAuth === "required"
  }
  return checked(s, options)
}

/**
 * Client options for the broker's own connections to a listener with these settings (`servername` is
 * the caller's: the host it connects to): the truststore to verify the peer, the keystore for mutual
 * TLS, and the host name check of `ssl.endpoint.identification.algorithm`.
 */
export const clientOptions = (s: SslSettings): tls.ConnectionOptions => {
  const options: tls.ConnectionOptions = {
    ...keyMaterial(s),
    ...trustMaterial(s),
    minVersion: s.minVersion,
    maxVersion: s.maxVersion,
    ...(s.ciphers === null ? {} : { ciphers: s.ciphers }),
    rejectUnauthorized: true,
    ...(s.verifyHostname ? {} : { checkServerIdentity: () => undefined })
  }
  return checked(s, options)
}
