/**
 * Kafka's `sasl.jaas.config` values: one JAAS login module entry,
 * `<LoginModuleClass> <required|requisite|sufficient|optional> [name=value ...];`, values quoted
 * (with backslash escapes) or bare tokens. The grammar is the client's (`Security.parseJaas`); this
 * module holds the lookups brokers need (the PLAIN users of `user_<name>="<password>"`, the broker's own
 * `username`/`password`). Errors name the config key, never a value.
 */
import { Security } from "@clustermirror/client"
import { Either } from "effect"

export interface JaasConfig {
  readonly loginModule: string
  readonly flag: "required" | "requisite" | "sufficient" | "optional"
  readonly options: ReadonlyMap<string, string>
}

export const PLAIN_LOGIN_MODULE = Security.PLAIN_LOGIN_MODULE
export const SCRAM_LOGIN_MODULE = Security.SCRAM_LOGIN_MODULE

/**
 * Parses one login module entry with the client's JAAS grammar (`Security.parseJaas`); throws an Error
 * naming `key` (the value may hold passwords: never quoted).
 */
export const parse = (text: string, key = "sasl.jaas.config"): JaasConfig => {
  const entries = Security.parseJaas(text)
  if (Either.isLeft(entries)) throw new Error(`${key}: ${entries.left.message}`)
  if (entries.right.length !== 1)
    throw new Error(`${key}: expected exactly one login module entry, found ${entries.right.length}`)
  const [entry] = entries.right
  return { loginModule: entry!.loginModule, flag: entry!.flag, options: new Map(entry!.options) }
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
