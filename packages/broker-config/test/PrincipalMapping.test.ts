/**
 * `ssl.principal.mapping.rules` with Kafka's syntax: rules in order, the first whose pattern matches the
 * whole distinguished name wins, `L`/`U` change the case, `DEFAULT` keeps the name, no match maps to none.
 */
import { describe, expect, it } from "vitest"
import * as PrincipalMapping from "../src/PrincipalMapping.js"

const KAFKA_EXAMPLE =
  "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L," +
  "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/L,DEFAULT"

describe("PrincipalMapping", () => {
  it("applies Kafka's documented example rules in order", () => {
    const rules = PrincipalMapping.parse(KAFKA_EXAMPLE)
    expect(rules).toHaveLength(4)
    expect(PrincipalMapping.apply(rules, "CN=kafka-client,OU=ServiceUsers,O=Example")).toBe("kafka-client")
    expect(PrincipalMapping.apply(rules, "CN=Duke,OU=JavaSoft,O=Sun Microsystems,L=Palo Alto,ST=CA,C=US")).toBe(
      "duke@javasoft"
    )
    expect(PrincipalMapping.apply(rules, "O=Example,CN=Admin.User")).toBe("admin.user")
    expect(PrincipalMapping.apply(rules, "OU=none")).toBe("OU=none")
  })

  it("DEFAULT keeps the distinguished name; U upper-cases; no matching rule maps to none", () => {
    expect(PrincipalMapping.apply(PrincipalMapping.DEFAULT_RULES, "CN=client,OU=test")).toBe("CN=client,OU=test")
    const rules = PrincipalMapping.parse("RULE:^CN=([^,]+),OU=test$/$1/U")
    expect(PrincipalMapping.apply(rules, "CN=client,OU=test")).toBe("CLIENT")
    expect(PrincipalMapping.apply(rules, "CN=client,OU=other")).toBeNull()
  })

  it("takes an escaped slash in a pattern and spaces between rules", () => {
    const rules = PrincipalMapping.parse("RULE:^CN=a\\/b,(.*)$/x-$1/ ,  DEFAULT")
    expect(PrincipalMapping.apply(rules, "CN=a/b,OU=t")).toBe("x-OU=t")
  })

  it("refuses malformed rule lists, naming the setting", () => {
    for (const bad of ["RULE:^CN=(.*)$", "SOMETHING", "RULE:(/x/", "DEFAULT DEFAULT", ""])
      expect(() => PrincipalMapping.parse(bad)).toThrow("ssl.principal.mapping.rules")
  })
})
