import { describe, expect, it } from "@effect/vitest"
import * as Jaas from "../src/Jaas.js"

describe("Jaas", () => {
  it("parses Kafka's PlainLoginModule entry with its users", () => {
    const jaas = Jaas.parse(
      'org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";'
    )
    expect(jaas.loginModule).toBe(Jaas.PLAIN_LOGIN_MODULE)
    expect(jaas.flag).toBe("required")
    expect(Jaas.clientCredentials(jaas)).toEqual({ username: "admin", password: "admin-secret" })
    expect([...Jaas.plainUsers(jaas)]).toEqual([
      ["admin", "admin-secret"],
      ["alice", "alice-secret"]
    ])
  })

  it("takes bare values, escapes in quotes and spaces around =", () => {
    const jaas = Jaas.parse(
      'org.apache.kafka.common.security.scram.ScramLoginModule   optional\n username = bob password="p\\"w;d" ;'
    )
    expect(jaas.loginModule).toBe(Jaas.SCRAM_LOGIN_MODULE)
    expect(Jaas.clientCredentials(jaas)).toEqual({ username: "bob", password: 'p"w;d' })
    expect(Jaas.plainUsers(jaas).size).toBe(0)
  })

  it("refuses malformed entries naming the key, never the values", () => {
    const cases = [
      "",
      "org.Module",
      "org.Module mandatory;",
      'org.Module required password="top-secret"',
      'org.Module required password="top-secret',
      "org.Module required password;",
      'org.Module required a="1"; other.Module required;'
    ]
    for (const text of cases) {
      let message = ""
      try {
        Jaas.parse(text, "listener.name.sasl_plaintext.plain.sasl.jaas.config")
      } catch (e) {
        message = (e as Error).message
      }
      expect(message, text).toMatch(/^listener\.name\.sasl_plaintext\.plain\.sasl\.jaas\.config: /)
      expect(message).not.toContain("top-secret")
    }
  })
})
