/**
 * Kafka's `sasl.jaas.config` values: one JAAS login module entry,
 * `<LoginModuleClass> <required|requisite|sufficient|optional> [name=value ...];`, values quoted
 * ("..." with backslash escapes) or bare tokens. Owns the grammar and the lookups brokers need (the
 * PLAIN users of `user_<name>="<password>"`, the broker's own `username`/`password`). Errors name the
 * config key and the offending position, never a value.
 */

export interface JaasConfig {
  readonly loginModule: string
  readonly flag: "required" | "requisite" | "sufficient" | "optional"
  readonly options: ReadonlyMap<string, string>
}

export const PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
export const SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"

const FLAGS = new Set(["required", "requisite", "sufficient", "optional"])

/** Parses one login module entry; throws an Error naming `key` (the value may hold passwords: never quoted). */
export const parse = (text: string, key = "sasl.jaas.config"): JaasConfig => {
  let i = 0
  const fail = (why: string): never => {
    throw new Error(`${key}: ${why} at position ${i}`)
  }
  const skipSpace = () => {
    while (i < text.length && /\s/.test(text[i]!)) i++
  }
  const token = (): string => {
    const start = i
    while (i < text.length && /[^\s=;"]/.test(text[i]!)) i++
    return text.slice(start, i)
  }
  skipSpace()
  const loginModule = token()
  if (loginModule === "") fail("expected a login module class")
  skipSpace()
  const flag = token()
  if (!FLAGS.has(flag)) fail("expected a control flag (required, requisite, sufficient or optional)")
  const options = new Map<string, string>()
  for (;;) {
    skipSpace()
    if (i >= text.length) fail('expected ";" after the last option')
    if (text[i] === ";") {
      i++
      break
    }
    const name = token()
    if (name === "") fail("expected an option name")
    skipSpace()
    if (text[i] !== "=") fail(`expected "=" after option ${name}`)
    i++
    skipSpace()
    let value: string
    if (text[i] === '"') {
      i++
      let v = ""
      for (;;) {
        if (i >= text.length) fail(`unterminated quoted value of option ${name}`)
        const c = text[i++]!
        if (c === '"') break
        if (c === "\\" && i < text.length) v += text[i++]!
        else v += c
      }
      value = v
    } else {
      value = token()
      if (value === "") fail(`expected a value for option ${name}`)
    }
    options.set(name, value)
  }
  skipSpace()
  if (i < text.length) fail("only one login module entry is supported")
  return { loginModule, flag: flag as JaasConfig["flag"], options }
}

/** PLAIN's users: the `user_<name>` options of a PlainLoginModule entry, name → password. */
export const plainUsers = (jaas: JaasConfig): ReadonlyMap<string, string> => {
  const out = new Map<string, string>()
  for (const [k, v] of jaas.options) if (k.startsWith("user_") && k.length > 5) out.set(k.slice(5), v)
  return out
}

/** The entry's own `username` and `password` (what the broker authenticates with as a client). */
export const clientCredentials = (
  jaas: JaasConfig
): { readonly username: string; readonly password: string } | null => {
  const username = jaas.options.get("username")
  const password = jaas.options.get("password")
  return username === undefined || password === undefined ? null : { username, password }
}
