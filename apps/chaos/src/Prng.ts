/**
 * A small seeded pseudo-random generator (mulberry32) for the fault campaign: the same seed gives the
 * same sequence on every machine, so a campaign's schedule can be replayed from its seed.
 *
 * Pure apart from its own counter; never reads the clock or `Math.random`.
 */

export interface Prng {
  /** A number in [0, 1). */
  next(): number
  /** An integer in [lo, hi], both included. */
  int(lo: number, hi: number): number
  /** One element of a non-empty array. */
  pick<A>(items: ReadonlyArray<A>): A
  /** True with probability `p`. */
  chance(p: number): boolean
}

/** A generator from a 32-bit seed (other numbers are reduced to 32 bits). */
export const make = (seed: number): Prng => {
  let state = seed >>> 0
  const next = (): number => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const int = (lo: number, hi: number): number => lo + Math.floor(next() * (hi - lo + 1))
  return {
    next,
    int,
    pick: <A>(items: ReadonlyArray<A>): A => {
      if (items.length === 0) throw new Error("pick from an empty array")
      return items[int(0, items.length - 1)]!
    },
    chance: (p) => next() < p
  }
}

/** A fresh random seed (for a campaign run without `--seed`). */
export const randomSeed = (): number => Math.floor(Math.random() * 2 ** 31)
