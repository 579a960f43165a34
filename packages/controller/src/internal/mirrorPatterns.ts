/**
 * A mirror's topic patterns (KIP-1279 §5.3): `mirror.topics.include` / `mirror.topics.exclude` are
 * comma-separated regex lists; a list matches a name when one of its patterns matches the whole name;
 * an empty list matches nothing; exclude wins over include. Pure list arithmetic: which ConfigRecords
 * to write is the caller's business.
 */
import { Either } from "effect"

export const INCLUDE = "mirror.topics.include"
export const EXCLUDE = "mirror.topics.exclude"

/** The entries of a stored list value: trimmed, empty entries dropped, first occurrence kept. */
export const parse = (value: string): ReadonlyArray<string> => dedupe(value.split(",").map((x) => x.trim()))

const dedupe = (xs: ReadonlyArray<string>): ReadonlyArray<string> => [...new Set(xs.filter((x) => x.length > 0))]

/** The stored form of a list. */
export const format = (patterns: ReadonlyArray<string>): string => patterns.join(",")

/** `list` with `add` appended (those not already there) and `remove` taken out. */
export const update = (
  list: ReadonlyArray<string>,
  add: ReadonlyArray<string>,
  remove: ReadonlyArray<string>
): ReadonlyArray<string> => {
  const removed = new Set(remove)
  return dedupe([...list, ...add]).filter((p) => !removed.has(p))
}

/** A compiled list: whether a name fully matches one of its patterns. */
export type Matcher = (name: string) => boolean

/** Compiles a list; fails with the first pattern that is not a valid regular expression. */
export const compile = (patterns: ReadonlyArray<string>): Either.Either<Matcher, string> => {
  if (patterns.length === 0) return Either.right(() => false)
  for (const p of patterns) {
    try {
      new RegExp(p)
    } catch {
      return Either.left(p)
    }
  }
  // Each pattern in its own group, so that an alternation inside one cannot escape the anchors.
  const re = new RegExp(`^(?:${patterns.map((p) => `(?:${p})`).join("|")})$`)
  return Either.right((name) => re.test(name))
}

/** Whether a stored or requested pattern compiles. */
export const isValid = (pattern: string): boolean => Either.isRight(compile([pattern]))
