/**
 * Regular expressions of consumer-group subscriptions (`SubscribedTopicRegex`), which Kafka evaluates
 * with RE2/J and matches against whole topic names. We accept the part of that syntax that means the
 * same in JavaScript and refuse the rest, so that a pattern never matches differently than on Kafka:
 *
 * - accepted: literals, `.`, classes `[...]` and `[^...]` with ranges, `\d \D \w \W \s \S`, escaped
 *   metacharacters (`\.`, `\*`, ...), groups `(...)` and `(?:...)`, alternation `|`, quantifiers
 *   `* + ? {n} {n,} {n,m}` and their lazy forms, anchors `^ $`;
 * - refused (INVALID_REGULAR_EXPRESSION): lookaround and backreferences (RE2 has none), named groups,
 *   inline flags `(?i)`, possessive quantifiers, Unicode classes `\p{..}`, `\b \B \A \z \Q..\E`, and
 *   anything JavaScript does not parse.
 *
 * Internal topics (`__consumer_offsets`, `__transaction_state`) never match.
 */
import { Either } from "effect"

const INTERNAL = new Set(["__consumer_offsets", "__transaction_state"])

/** Refused constructs, with why. */
const REFUSED: ReadonlyArray<readonly [RegExp, string]> = [
  [/\(\?[=!<]/, "lookaround is not supported"],
  [/\(\?[a-zA-Z]/, "inline flags and named groups are not supported"],
  [/\\[1-9kbBAzZGQEpP]/, "backreferences, word boundaries, \\A \\z \\Q \\E and Unicode classes are not supported"],
  [/[*+?}]\+/, "possessive quantifiers are not supported"]
]

export interface Compiled {
  readonly source: string
  readonly regex: RegExp
}

/** The pattern, or why it is refused. */
export const compile = (pattern: string): Either.Either<Compiled, string> => {
  if (pattern === "") return Either.left("SubscribedTopicRegex must not be empty.")
  // Escaped backslashes cannot start a construct: take them out before looking for refused ones.
  const scanned = pattern.replace(/\\\\/g, "")
  for (const [re, why] of REFUSED)
    if (re.test(scanned)) return Either.left(`SubscribedTopicRegex ${pattern} is invalid: ${why}.`)
  try {
    return Either.right({ source: pattern, regex: new RegExp(`^(?:${pattern})$`, "u") })
  } catch (e) {
    return Either.left(`SubscribedTopicRegex ${pattern} is invalid: ${(e as Error).message}.`)
  }
}

export const matches = (compiled: Compiled, topic: string): boolean =>
  !INTERNAL.has(topic) && compiled.regex.test(topic)
