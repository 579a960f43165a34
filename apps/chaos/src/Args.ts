/**
 * The command line of `pnpm chaos`: `[--seed N] [--minutes M] [--keep-data] [--data-dir DIR]`. Pure:
 * an unknown flag or a bad value is an error naming it, never ignored.
 */

export interface Args {
  /** Absent: a random seed is drawn (and printed). */
  readonly seed: number | undefined
  readonly minutes: number
  readonly keepData: boolean
  readonly dataDir: string | undefined
  readonly help: boolean
}

export const usage = `usage: pnpm chaos [--seed N] [--minutes M] [--keep-data] [--data-dir DIR]
  --seed N       the fault schedule's seed (a 32-bit unsigned integer; random and printed when absent)
  --minutes M    minutes of faults (default 3; fractions allowed)
  --keep-data    keep the data dirs and server logs also when every check passes
  --data-dir DIR where the clusters' files go (default: a new temp dir)`

export const DEFAULT_MINUTES = 3

export const parse = (argv: ReadonlyArray<string>): Args => {
  let seed: number | undefined
  let minutes = DEFAULT_MINUTES
  let keepData = false
  let dataDir: string | undefined
  let help = false
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    const value = (): string => {
      const v = argv[++i]
      if (v === undefined) throw new Error(`${a} needs a value`)
      return v
    }
    if (a === "--") continue
    else if (a === "--seed") {
      const v = value()
      const n = Number(v)
      if (!/^\d+$/.test(v) || n > 0xffffffff) throw new Error(`--seed ${v}: expected an integer in 0..4294967295`)
      seed = n
    } else if (a === "--minutes") {
      const v = value()
      const n = Number(v)
      if (!Number.isFinite(n) || n <= 0 || n > 24 * 60)
        throw new Error(`--minutes ${v}: expected a number of minutes above 0`)
      minutes = n
    } else if (a === "--keep-data") keepData = true
    else if (a === "--data-dir") dataDir = value()
    else if (a === "--help" || a === "-h") help = true
    else throw new Error(`unknown argument ${a}`)
  }
  return { seed, minutes, keepData, dataDir, help }
}
