/**
 * How a client connection secures itself: TLS for `security.protocol` SSL and SASL_SSL, SASL for
 * SASL_PLAINTEXT and SASL_SSL. The same shape serves every connection we open (inter-broker, to the
 * controller, the mirror's to its source, the CLI's), so one parse of Kafka's client configs feeds all.
 *
 * `fromConfig` reads Kafka's client security configs (`security.protocol`, `sasl.*`, `ssl.*`) into that
 * shape. Key stores and trust stores named by `*.location` are read when the configs are parsed (never
 * later), unless `readFiles` is false: then every key is checked except what the files hold (what a
 * controller does for a mirror whose files live on its brokers). Every refusal names the key, and the
 * path where a file is concerned, never a password or the JAAS text: a `SecurityConfigError` can be
 * logged and returned as is.
 */
import { Data, Either } from "effect"
import * as fs from "node:fs"
import * as tls from "node:tls"
import * as Pkcs12 from "./Pkcs12.js"

/** The SASL mechanisms a client can authenticate with. */
export type SaslMechanism = "PLAIN" | "SCRAM-SHA-256" | "SCRAM-SHA-512"

export interface SaslCredentials {
  readonly mechanism: SaslMechanism
  readonly username: string
  /** Never logged or returned: holders must not put it in messages. */
  readonly password: string
}

export interface ClientSecurity {
  /** Connect with TLS using these options (`servername` for SNI and hostname checks). Absent: plain TCP. */
  readonly tls?: tls.ConnectionOptions
  /** Authenticate with SASL after connecting. Absent: no SASL. */
  readonly sasl?: SaslCredentials
}

/** Kafka's `security.protocol` values. */
export type SecurityProtocol = "PLAINTEXT" | "SSL" | "SASL_PLAINTEXT" | "SASL_SSL"
export const SECURITY_PROTOCOLS: ReadonlyArray<SecurityProtocol> = ["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]

/** A client security config that cannot be used: `key` names the setting; no field ever holds a secret. */
export class SecurityConfigError extends Data.TaggedError("SecurityConfigError")<{
  readonly key: string
  /** Why, without the key. */
  readonly reason: string
}> {
  override get message(): string {
    return `${this.key}: ${this.reason}`
  }
}

// ---------------------------------------------------------------------------------------------------
// Known keys

/** Kafka client configs whose values are secrets (ConfigDef type PASSWORD). */
export const PASSWORD_CONFIGS: ReadonlySet<string> = new Set([
  "sasl.jaas.config",
  "ssl.keystore.password",
  "ssl.key.password",
  "ssl.keystore.key",
  "ssl.keystore.certificate.chain",
  "ssl.truststore.password",
  "ssl.truststore.certificates"
])

/**
 * Whether a config's value is a secret, for clients and brokers alike: the client password configs,
 * the same behind a listener or mechanism prefix (`listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config`),
 * and any key that speaks of a password. DescribeConfigs answers these with a null value
 * and `isSensitive`; nothing logs them.
 */
export const isSensitive = (key: string): boolean => {
  if (PASSWORD_CONFIGS.has(key)) return true
  for (const k of PASSWORD_CONFIGS) if (key.endsWith(`.${k}`)) return true
  return /password/i.test(key)
}

/** The security keys `fromConfig` implements. */
export const CONFIGS: ReadonlyArray<string> = [
  "security.protocol",
  "sasl.mechanism",
  "sasl.jaas.config",
  "ssl.protocol",
  "ssl.enabled.protocols",
  "ssl.endpoint.identification.algorithm",
  "ssl.keystore.type",
  "ssl.keystore.location",
  "ssl.keystore.password",
  "ssl.key.password",
  "ssl.keystore.certificate.chain",
  "ssl.keystore.key",
  "ssl.truststore.type",
  "ssl.truststore.location",
  "ssl.truststore.password",
  "ssl.truststore.certificates",
  "ssl.keymanager.algorithm",
  "ssl.trustmanager.algorithm"
]
const KNOWN: ReadonlySet<string> = new Set(CONFIGS)

/** Kafka client security keys we refuse whatever their value, with the reason. */
const UNSUPPORTED: ReadonlyMap<string, string> = new Map([
  ["security.providers", "custom security providers are Java classes"],
  ["sasl.client.callback.handler.class", "SASL callback handlers are Java classes"],
  ["sasl.login.callback.handler.class", "SASL callback handlers are Java classes"],
  ["sasl.login.class", "SASL login classes are Java classes"],
  ["sasl.kerberos.service.name", "GSSAPI (Kerberos) is not supported"],
  ["ssl.provider", "security providers are Java's"],
  ["ssl.cipher.suites", "cipher suites are not configurable: Node's TLS defaults apply"],
  ["ssl.secure.random.implementation", "the random source is Node's"],
  ["ssl.engine.factory.class", "SSL engine factories are Java classes"]
])

/** Whether `key` is a client security key (`security.protocol`, `security.providers`, `ssl.*`, `sasl.*`). */
export const isSecurityConfig = (key: string): boolean =>
  key === "security.protocol" || key === "security.providers" || key.startsWith("ssl.") || key.startsWith("sasl.")

// ---------------------------------------------------------------------------------------------------
// JAAS

export const PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
export const SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"

/** JAAS control flags. */
export type JaasFlag = "required" | "requisite" | "sufficient" | "optional"
const FLAGS: ReadonlyArray<JaasFlag> = ["required", "requisite", "sufficient", "optional"]

export interface JaasEntry {
  readonly loginModule: string
  readonly flag: JaasFlag
  /** Options in the order given. */
  readonly options: ReadonlyArray<readonly [string, string]>
}

/** A JAAS text that does not parse; `message` never quotes the text (it holds passwords). */
export class JaasError extends Data.TaggedError("JaasError")<{ readonly message: string }> {}

type Token =
  | { readonly kind: "word"; readonly text: string }
  | { readonly kind: "quoted"; readonly text: string }
  | { readonly kind: "char"; readonly text: string }

const isWordChar = (c: string): boolean => /[A-Za-z0-9._\-$]/.test(c)

const ESCAPES: Record<string, string> = { a: "\x07", b: "\b", f: "\f", n: "\n", r: "\r", t: "\t", v: "\v" }

const tokenize = (text: string): Either.Either<ReadonlyArray<Token>, JaasError> => {
  const tokens: Array<Token> = []
  let i = 0
  while (i < text.length) {
    const c = text[i]!
    if (/\s/.test(c)) {
      i++
    } else if (c === "/" && text[i + 1] === "/") {
      while (i < text.length && text[i] !== "\n" && text[i] !== "\r") i++
    } else if (c === "/" && text[i + 1] === "*") {
      const end = text.indexOf("*/", i + 2)
      if (end < 0) return Either.left(new JaasError({ message: "unterminated comment" }))
      i = end + 2
    } else if (c === '"' || c === "'") {
      let out = ""
      i++
      for (;;) {
        if (i >= text.length || text[i] === "\n" || text[i] === "\r")
          return Either.left(new JaasError({ message: "unterminated quoted value" }))
        const d = text[i]!
        if (d === c) {
          i++
          break
        }
        if (d === "\\") {
          const e = text[i + 1]
          if (e === undefined) return Either.left(new JaasError({ message: "unterminated quoted value" }))
          if (/[0-7]/.test(e)) {
            // Up to three octal digits (at most two when the first is above 3), as Kafka's JAAS configs are read.
            let digits = e
            const max = e <= "3" ? 3 : 2
            while (digits.length < max && /[0-7]/.test(text[i + 1 + digits.length] ?? ""))
              digits += text[i + 1 + digits.length]
            out += String.fromCharCode(Number.parseInt(digits, 8))
            i += 1 + digits.length
          } else {
            out += ESCAPES[e] ?? e
            i += 2
          }
        } else {
          out += d
          i++
        }
      }
      tokens.push({ kind: "quoted", text: out })
    } else if (isWordChar(c)) {
      let j = i
      while (j < text.length && isWordChar(text[j]!)) j++
      tokens.push({ kind: "word", text: text.slice(i, j) })
      i = j
    } else {
      tokens.push({ kind: "char", text: c })
      i++
    }
  }
  return Either.right(tokens)
}

/**
 * Parses a JAAS config as Kafka's `sasl.jaas.config` holds it: login module entries
 * `<class> <flag> [name=value ...];`, values bare words or quoted (`"` or `'`) with backslash escapes,
 * `//` and `/* *\/` comments between tokens.
 */
export const parseJaas = (text: string): Either.Either<ReadonlyArray<JaasEntry>, JaasError> =>
  Either.flatMap(tokenize(text), (tokens) => {
    const entries: Array<JaasEntry> = []
    let i = 0
    const fail = (message: string) => Either.left(new JaasError({ message }))
    while (i < tokens.length) {
      const module = tokens[i++]!
      if (module.kind !== "word") return fail("expected a login module class name")
      const flagToken = tokens[i++]
      const flag = flagToken?.kind === "word" ? FLAGS.find((f) => f === flagToken.text.toLowerCase()) : undefined
      if (flag === undefined)
        return fail(`expected a control flag (${FLAGS.join(", ")}) after the login module ${module.text}`)
      const options: Array<readonly [string, string]> = []
      for (;;) {
        const t = tokens[i++]
        if (t === undefined) return fail(`the entry of login module ${module.text} does not end with ';'`)
        if (t.kind === "char" && t.text === ";") break
        if (t.kind !== "word") return fail(`expected an option name in the entry of login module ${module.text}`)
        const eq = tokens[i++]
        if (eq === undefined || eq.kind !== "char" || eq.text !== "=")
          return fail(`expected '=' after the option ${t.text} of login module ${module.text}`)
        const value = tokens[i++]
        if (value === undefined || value.kind === "char")
          return fail(`expected a value for the option ${t.text} of login module ${module.text}`)
        if (options.some(([k]) => k === t.text))
          return fail(`the option ${t.text} is given twice in the entry of login module ${module.text}`)
        options.push([t.text, value.text])
      }
      entries.push({ loginModule: module.text, flag, options })
    }
    return Either.right(entries)
  })

/** A JAAS value quoted so that `parseJaas` reads it back unchanged. */
export const quoteJaas = (value: string): string =>
  `"${value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n").replace(/\r/g, "\\r")}"`

/** One JAAS entry as text (every value quoted). */
export const formatJaas = (entry: JaasEntry): string =>
  [entry.loginModule, entry.flag, ...entry.options.map(([k, v]) => `${k}=${quoteJaas(v)}`)].join(" ") + ";"

// ---------------------------------------------------------------------------------------------------
// fromConfig

export interface ParseOptions {
  /** Read the key and trust store files (default true); false checks everything else. */
  readonly readFiles?: boolean
}

type Props = ReadonlyMap<string, string> | Readonly<Record<string, string>>

const isMap = (props: Props): props is ReadonlyMap<string, string> => props instanceof Map

const entriesOf = (props: Props): ReadonlyMap<string, string> => (isMap(props) ? props : new Map(Object.entries(props)))

class Refusal {
  constructor(readonly error: SecurityConfigError) {}
}

const refuse = (key: string, why: string): never => {
  throw new Refusal(new SecurityConfigError({ key, reason: why }))
}

/** How a value appears in a message: passwords never do. */
const shown = (key: string, value: string): string => (isSensitive(key) ? "[hidden]" : `"${value}"`)

const readFile = (key: string, path: string): Buffer => {
  try {
    return fs.readFileSync(path)
  } catch (e) {
    const code = e instanceof Error && "code" in e && typeof e.code === "string" ? e.code : "unreadable"
    return refuse(key, `cannot read ${path} (${code})`)
  }
}

const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----[\s\S]*?-----END \1-----/g

const pemBlocks = (text: string, kind: (label: string) => boolean): ReadonlyArray<string> =>
  [...text.matchAll(PEM_BLOCK)].filter((m) => kind(m[1]!)).map((m) => m[0])

const certificates = (key: string, text: string, where: string): ReadonlyArray<string> => {
  const certs = pemBlocks(text, (l) => l === "CERTIFICATE")
  if (certs.length === 0) refuse(key, `no PEM certificate (-----BEGIN CERTIFICATE-----) in ${where}`)
  return certs
}

const privateKey = (key: string, text: string, where: string): string => {
  const keys = pemBlocks(text, (l) => l.endsWith("PRIVATE KEY"))
  if (keys.length !== 1)
    refuse(key, `expected exactly one PEM private key (-----BEGIN PRIVATE KEY-----) in ${where}, found ${keys.length}`)
  return keys[0]!
}

const TLS_VERSIONS = ["TLSv1.2", "TLSv1.3"] as const
type TlsVersion = (typeof TLS_VERSIONS)[number]

const tlsVersions = (get: (k: string) => string | undefined): { minVersion: TlsVersion; maxVersion: TlsVersion } => {
  const protocol = get("ssl.protocol")
  let versions: ReadonlyArray<TlsVersion> = TLS_VERSIONS
  if (protocol !== undefined) {
    const p = protocol.trim()
    if (p === "TLSv1.2") versions = ["TLSv1.2"]
    else if (p !== "TLSv1.3" && p !== "TLS")
      refuse("ssl.protocol", `${shown("ssl.protocol", protocol)} is not supported: one of TLSv1.3, TLSv1.2, TLS`)
  }
  const enabled = get("ssl.enabled.protocols")
  if (enabled !== undefined) {
    const list = splitList(enabled)
    if (list.length === 0) refuse("ssl.enabled.protocols", "must name at least one of TLSv1.2, TLSv1.3")
    for (const v of list)
      if (!TLS_VERSIONS.some((t) => t === v))
        refuse(
          "ssl.enabled.protocols",
          `${shown("ssl.enabled.protocols", v)} is not supported: TLSv1.2 and TLSv1.3 only`
        )
    versions = TLS_VERSIONS.filter((t) => list.includes(t))
  }
  return { minVersion: versions[0]!, maxVersion: versions[versions.length - 1]! }
}

const storeType = (key: string, value: string | undefined): "PEM" | "PKCS12" | undefined => {
  if (value === undefined) return undefined
  const t = value.trim().toUpperCase()
  if (t === "PEM" || t === "PKCS12") return t
  if (t === "JKS") return refuse(key, "JKS key stores are not supported: use PEM or PKCS12")
  return refuse(key, `${shown(key, value)} is not supported: PEM or PKCS12`)
}

const truststore = (get: (k: string) => string | undefined, readFiles: boolean): tls.ConnectionOptions => {
  const type = storeType("ssl.truststore.type", get("ssl.truststore.type"))
  const location = get("ssl.truststore.location")
  const password = get("ssl.truststore.password")
  const inline = get("ssl.truststore.certificates")
  if (inline !== undefined) {
    if (type !== "PEM") refuse("ssl.truststore.certificates", "needs ssl.truststore.type=PEM")
    if (location !== undefined)
      refuse("ssl.truststore.certificates", "and ssl.truststore.location cannot both be set: choose one")
    if (password !== undefined) refuse("ssl.truststore.password", "is not used with PEM certificates: remove it")
    return { ca: [...certificates("ssl.truststore.certificates", inline, "the value")] }
  }
  if (location === undefined) {
    if (password !== undefined) refuse("ssl.truststore.password", "is set without ssl.truststore.location")
    if (type !== undefined) refuse("ssl.truststore.type", "is set without ssl.truststore.location")
    // No trust store: the system's certificate authorities, as the JVM's default trust store.
    return {}
  }
  if (type === undefined)
    return refuse(
      "ssl.truststore.type",
      "is not set, so Kafka's default JKS applies, which is not supported: set ssl.truststore.type=PEM or PKCS12"
    )
  if (type === "PEM") {
    if (password !== undefined) refuse("ssl.truststore.password", "is not used with a PEM trust store: remove it")
    if (!readFiles) return {}
    const text = readFile("ssl.truststore.location", location).toString("utf8")
    return { ca: [...certificates("ssl.truststore.location", text, location)] }
  }
  if (!readFiles) return {}
  const der = readFile("ssl.truststore.location", location)
  const certs = Pkcs12.certificates(der, password ?? null)
  if (Either.isLeft(certs))
    return refuse("ssl.truststore.location", `the PKCS12 trust store ${location} cannot be read: ${certs.left}`)
  if (certs.right.length === 0)
    refuse("ssl.truststore.location", `the PKCS12 trust store ${location} holds no certificate`)
  return { ca: certs.right.map(Pkcs12.toPem) }
}

const keystore = (get: (k: string) => string | undefined, readFiles: boolean): tls.ConnectionOptions => {
  const type = storeType("ssl.keystore.type", get("ssl.keystore.type"))
  const location = get("ssl.keystore.location")
  const password = get("ssl.keystore.password")
  const keyPassword = get("ssl.key.password")
  const chain = get("ssl.keystore.certificate.chain")
  const key = get("ssl.keystore.key")
  const passphrase = keyPassword === undefined ? {} : { passphrase: keyPassword }
  if (chain !== undefined || key !== undefined) {
    if (chain === undefined) return refuse("ssl.keystore.certificate.chain", "must be set with ssl.keystore.key")
    if (key === undefined) return refuse("ssl.keystore.key", "must be set with ssl.keystore.certificate.chain")
    if (type !== "PEM") refuse("ssl.keystore.key", "needs ssl.keystore.type=PEM")
    if (location !== undefined) refuse("ssl.keystore.location", "cannot be set with ssl.keystore.key: choose one")
    if (password !== undefined) refuse("ssl.keystore.password", "is not used with a PEM key: use ssl.key.password")
    const certs = certificates("ssl.keystore.certificate.chain", chain, "the value")
    return { cert: certs.join("\n"), key: privateKey("ssl.keystore.key", key, "the value"), ...passphrase }
  }
  if (location === undefined) {
    for (const k of ["ssl.keystore.type", "ssl.keystore.password", "ssl.key.password"])
      if (get(k) !== undefined) refuse(k, "is set without a key store (ssl.keystore.location or ssl.keystore.key)")
    return {}
  }
  if (type === undefined)
    return refuse(
      "ssl.keystore.type",
      "is not set, so Kafka's default JKS applies, which is not supported: set ssl.keystore.type=PEM or PKCS12"
    )
  if (type === "PEM") {
    if (password !== undefined)
      refuse("ssl.keystore.password", "is not used with a PEM key store: use ssl.key.password")
    if (!readFiles) return {}
    const text = readFile("ssl.keystore.location", location).toString("utf8")
    return {
      cert: certificates("ssl.keystore.location", text, location).join("\n"),
      key: privateKey("ssl.keystore.location", text, location),
      ...passphrase
    }
  }
  if (password === undefined) refuse("ssl.keystore.password", "must be set for a PKCS12 key store")
  if (keyPassword !== undefined && keyPassword !== password)
    refuse("ssl.key.password", "must equal ssl.keystore.password for a PKCS12 key store (one passphrase opens both)")
  if (!readFiles) return {}
  return { pfx: readFile("ssl.keystore.location", location), passphrase: password! }
}

const splitList = (v: string): ReadonlyArray<string> =>
  v
    .split(",")
    .map((x) => x.trim())
    .filter((x) => x.length > 0)

const MECHANISMS: ReadonlyArray<SaslMechanism> = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]

const sasl = (get: (k: string) => string | undefined): SaslCredentials => {
  const given = get("sasl.mechanism")
  // KIP-1279's default for mirrors (Kafka's clients default to GSSAPI, which we do not support).
  const m = (given ?? "PLAIN").trim().toUpperCase()
  const mechanism = MECHANISMS.find((x) => x === m)
  if (mechanism === undefined) {
    if (m === "GSSAPI")
      return refuse("sasl.mechanism", "GSSAPI (Kerberos) is not supported: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
    if (m === "OAUTHBEARER")
      return refuse("sasl.mechanism", "OAUTHBEARER is not supported: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512")
    return refuse(
      "sasl.mechanism",
      `${shown("sasl.mechanism", given ?? "")} is not supported: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512`
    )
  }
  const jaas = get("sasl.jaas.config")
  if (jaas === undefined) return refuse("sasl.jaas.config", `must be set for SASL ${mechanism}`)
  const parsed = parseJaas(jaas)
  if (Either.isLeft(parsed)) return refuse("sasl.jaas.config", parsed.left.message)
  const entries = parsed.right
  if (entries.length !== 1)
    return refuse("sasl.jaas.config", `must hold exactly one login module, found ${entries.length}`)
  const entry = entries[0]!
  const expected = mechanism === "PLAIN" ? PLAIN_LOGIN_MODULE : SCRAM_LOGIN_MODULE
  if (entry.loginModule !== expected)
    refuse(
      "sasl.jaas.config",
      `the login module ${entry.loginModule} does not serve sasl.mechanism ${mechanism}: use ${expected}`
    )
  if (entry.flag !== "required") refuse("sasl.jaas.config", `the control flag must be required, not ${entry.flag}`)
  const options = new Map(entry.options)
  for (const k of options.keys())
    if (k !== "username" && k !== "password")
      refuse("sasl.jaas.config", `the option ${k} of ${entry.loginModule} is not supported: username and password only`)
  const username = options.get("username")
  const password = options.get("password")
  if (username === undefined) return refuse("sasl.jaas.config", `${entry.loginModule} needs a username option`)
  if (password === undefined) return refuse("sasl.jaas.config", `${entry.loginModule} needs a password option`)
  return { mechanism, username, password }
}

const parseProtocol = (value: string | undefined): SecurityProtocol => {
  if (value === undefined) return "PLAINTEXT"
  const p = value.trim().toUpperCase()
  const found = SECURITY_PROTOCOLS.find((x) => x === p)
  return found ?? refuse("security.protocol", `"${value}" is not one of ${SECURITY_PROTOCOLS.join(", ")}`)
}

/** The security protocol a config asks for (PLAINTEXT when unset), or why it is not one. */
export const protocolOf = (props: Props): Either.Either<SecurityProtocol, SecurityConfigError> => {
  try {
    return Either.right(parseProtocol(entriesOf(props).get("security.protocol")))
  } catch (e) {
    if (e instanceof Refusal) return Either.left(e.error)
    throw e
  }
}

/**
 * Kafka's client security configs as a `ClientSecurity`. Keys that are not security keys are left to
 * the caller; security keys we do not implement, TLS keys without TLS and SASL keys without SASL are
 * refused, as are JKS stores, GSSAPI and OAUTHBEARER.
 */
export const fromConfig = (
  props: Props,
  options: ParseOptions = {}
): Either.Either<ClientSecurity, SecurityConfigError> => {
  const all = entriesOf(props)
  const readFiles = options.readFiles ?? true
  try {
    const get = (k: string) => all.get(k)
    const protocol = parseProtocol(get("security.protocol"))
    const usesTls = protocol === "SSL" || protocol === "SASL_SSL"
    const usesSasl = protocol === "SASL_PLAINTEXT" || protocol === "SASL_SSL"
    for (const key of [...all.keys()].sort()) {
      if (!isSecurityConfig(key)) continue
      const why = UNSUPPORTED.get(key)
      if (why !== undefined) refuse(key, `is not supported: ${why}`)
      if (!KNOWN.has(key)) refuse(key, "is not a known security config")
      if (key.startsWith("ssl.") && !usesTls)
        refuse(key, `is a TLS setting, and security.protocol ${protocol} does not use TLS (SSL or SASL_SSL do)`)
      if (key.startsWith("sasl.") && !usesSasl)
        refuse(
          key,
          `is a SASL setting, and security.protocol ${protocol} does not use SASL (SASL_PLAINTEXT or SASL_SSL do)`
        )
    }
    let security: { tls?: tls.ConnectionOptions; sasl?: SaslCredentials } = {}
    if (usesTls) {
      const keyManager = get("ssl.keymanager.algorithm")
      if (keyManager !== undefined && keyManager.trim() !== "SunX509")
        refuse(
          "ssl.keymanager.algorithm",
          `${shown("ssl.keymanager.algorithm", keyManager)} is not supported: SunX509 only`
        )
      const trustManager = get("ssl.trustmanager.algorithm")
      if (trustManager !== undefined && trustManager.trim() !== "PKIX")
        refuse(
          "ssl.trustmanager.algorithm",
          `${shown("ssl.trustmanager.algorithm", trustManager)} is not supported: PKIX only`
        )
      const identification = get("ssl.endpoint.identification.algorithm")
      let checkIdentity: Pick<tls.ConnectionOptions, "checkServerIdentity"> = {}
      if (identification !== undefined) {
        const a = identification.trim().toLowerCase()
        if (a === "") checkIdentity = { checkServerIdentity: () => undefined }
        else if (a !== "https")
          refuse(
            "ssl.endpoint.identification.algorithm",
            `${shown("ssl.endpoint.identification.algorithm", identification)} is not supported: https, or empty to skip the host name check`
          )
      }
      const options: tls.ConnectionOptions = {
        ...tlsVersions(get),
        ...truststore(get, readFiles),
        ...keystore(get, readFiles),
        ...checkIdentity,
        rejectUnauthorized: true
      }
      // Inline material is checked whether files are read or not: it is all there is.
      const files = get("ssl.truststore.location") !== undefined || get("ssl.keystore.location") !== undefined
      if (readFiles || !files) {
        try {
          tls.createSecureContext(options)
        } catch (e) {
          const reason = e instanceof Error ? e.message : String(e)
          const key =
            options.pfx !== undefined
              ? "ssl.keystore.location"
              : options.key !== undefined
                ? get("ssl.keystore.key") !== undefined
                  ? "ssl.keystore.key"
                  : "ssl.keystore.location"
                : "ssl.truststore.location"
          const where = get(key) !== undefined && !isSensitive(key) ? ` ${get(key)}` : ""
          const hint = /bad decrypt|mac verify|wrong password/i.test(reason) ? " (wrong password?)" : ""
          refuse(key, `the TLS material${where} cannot be used: ${reason}${hint}`)
        }
      }
      security = { ...security, tls: options }
    }
    if (usesSasl) security = { ...security, sasl: sasl(get) }
    return Either.right(security)
  } catch (e) {
    if (e instanceof Refusal) return Either.left(e.error)
    throw e
  }
}

/** `fromConfig` without reading files: whether the configs can be used, for a caller that does not hold the files. */
export const validate = (props: Props): Either.Either<void, SecurityConfigError> =>
  Either.map(fromConfig(props, { readFiles: false }), () => undefined)
