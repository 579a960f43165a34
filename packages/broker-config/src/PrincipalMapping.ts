/**
 * `ssl.principal.mapping.rules`: how the subject of a client certificate becomes a principal name, with
 * Kafka's rule syntax. Rules are tried in order; `RULE:pattern/replacement/[LU]` applies when the pattern
 * matches the whole distinguished name (RFC 2253 form, e.g. `CN=client,OU=test`), giving the replacement
 * (`$1`… for groups), lower- or upper-cased by a trailing `L` or `U`; `DEFAULT` gives the name unchanged.
 * When no rule applies, the certificate maps to no principal and the connection is refused.
 */

export type Rule =
  | { readonly _tag: "Default" }
  | {
      readonly _tag: "Rule"
      readonly pattern: RegExp
      readonly replacement: string
      readonly toCase: "lower" | "upper" | null
      readonly source: string
    }

/** Reads up to the next unescaped `/`; a backslash keeps the next character (so `\/` is a slash). */
const readPart = (text: string, from: number): { readonly part: string; readonly next: number } | null => {
  let part = ""
  for (let i = from; i < text.length; i++) {
    const c = text[i]!
    if (c === "\\" && i + 1 < text.length) {
      const n = text[i + 1]!
      part += n === "/" ? "/" : `\\${n}`
      i++
    } else if (c === "/") return { part, next: i + 1 }
    else part += c
  }
  return null
}

/** Parses the rule list; throws naming the offending rule. */
export const parse = (value: string): ReadonlyArray<Rule> => {
  const rules: Rule[] = []
  const text = value.trim()
  let i = 0
  const fail = (why: string): never => {
    throw new Error(`ssl.principal.mapping.rules: ${why} at "${text.slice(i)}"`)
  }
  while (i < text.length) {
    while (i < text.length && /[\s,]/.test(text[i]!)) i++
    if (i >= text.length) break
    if (text.startsWith("DEFAULT", i)) {
      rules.push({ _tag: "Default" })
      i += "DEFAULT".length
    } else if (text.startsWith("RULE:", i)) {
      const start = i
      const pattern = readPart(text, i + "RULE:".length)
      if (pattern === null) fail("expected RULE:pattern/replacement/[LU]")
      const replacement = readPart(text, pattern!.next)
      if (replacement === null) fail("expected RULE:pattern/replacement/[LU]")
      i = replacement!.next
      let toCase: "lower" | "upper" | null = null
      if (text[i] === "L" || text[i] === "U") {
        toCase = text[i] === "L" ? "lower" : "upper"
        i++
      }
      let regex: RegExp
      try {
        regex = new RegExp(`^(?:${pattern!.part})$`)
      } catch (e) {
        return fail(`bad pattern (${e instanceof Error ? e.message : String(e)})`)
      }
      rules.push({
        _tag: "Rule",
        pattern: regex,
        replacement: replacement!.part.replaceAll("\\", ""),
        toCase,
        source: text.slice(start, i)
      })
    } else fail("expected DEFAULT or RULE:")
    while (i < text.length && /\s/.test(text[i]!)) i++
    if (i < text.length && text[i] !== ",") fail("expected a comma between rules")
  }
  if (rules.length === 0) throw new Error("ssl.principal.mapping.rules: no rules")
  return rules
}

export const DEFAULT_RULES: ReadonlyArray<Rule> = [{ _tag: "Default" }]

/** The principal name for a distinguished name, or null when no rule applies. */
export const apply = (rules: ReadonlyArray<Rule>, distinguishedName: string): string | null => {
  for (const r of rules) {
    if (r._tag === "Default") return distinguishedName
    if (!r.pattern.test(distinguishedName)) continue
    const mapped = distinguishedName.replace(r.pattern, r.replacement)
    return r.toCase === "lower" ? mapped.toLowerCase() : r.toCase === "upper" ? mapped.toUpperCase() : mapped
  }
  return null
}
