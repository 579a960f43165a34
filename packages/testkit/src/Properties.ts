/**
 * Java `.properties` text for peer configuration files (Apache Kafka's `server.properties`, our server's
 * `--config` file): rendering from a record, with escaping so that any value survives the round trip.
 *
 * It only formats text; writing files is left to the caller.
 */

/** A configuration as the tests write it: values are rendered with `String(value)`. */
export type Properties = Readonly<Record<string, string | number | boolean | bigint>>

const escapeText = (s: string, isKey: boolean): string => {
  let out = ""
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!
    if (c === "\\") out += "\\\\"
    else if (c === "\n") out += "\\n"
    else if (c === "\r") out += "\\r"
    else if (c === "\t") out += "\\t"
    else if (c === "\f") out += "\\f"
    // Java reads properties files as ISO-8859-1; \uXXXX keeps any other character intact.
    else if (c.charCodeAt(0) > 0x7e || c.charCodeAt(0) < 0x20)
      out += `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`
    // A leading space of a value, and any separator inside a key, would otherwise be eaten by the parser.
    else if (c === " " && (isKey || i === 0)) out += "\\ "
    else if (isKey && (c === "=" || c === ":")) out += `\\${c}`
    else if ((c === "#" || c === "!") && i === 0) out += `\\${c}`
    else out += c
  }
  return out
}

/** Renders `key=value` lines in insertion order, ending with a newline. */
export const render = (props: Properties): string =>
  Object.entries(props)
    .map(([k, v]) => `${escapeText(k, true)}=${escapeText(String(v), false)}\n`)
    .join("")

/** Merges layers left to right; later layers win, `undefined` values are dropped. */
export const merge = (
  ...layers: ReadonlyArray<Readonly<Record<string, string | number | boolean | bigint | undefined>> | undefined>
): Properties => {
  const out: Record<string, string | number | boolean | bigint> = {}
  for (const layer of layers) {
    if (layer === undefined) continue
    for (const [k, v] of Object.entries(layer)) {
      if (v === undefined) delete out[k]
      else out[k] = v
    }
  }
  return out
}
