/**
 * `pnpm chaos`: the fault campaign against two real clusters (see Campaign.ts). Prints the seed first,
 * exits 0 only when every check passed, 1 when one failed, 2 on bad usage.
 */
import { resolve } from "node:path"
import * as Args from "./Args.js"
import * as Campaign from "./Campaign.js"
import * as Prng from "./Prng.js"

const main = async (): Promise<number> => {
  let args: Args.Args
  try {
    args = Args.parse(process.argv.slice(2))
  } catch (e) {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n${Args.usage}\n`)
    return 2
  }
  if (args.help) {
    process.stdout.write(`${Args.usage}\n`)
    return 0
  }
  const seed = args.seed ?? Prng.randomSeed()
  process.stdout.write(`seed ${seed} (replay with: pnpm chaos --seed ${seed} --minutes ${args.minutes})\n`)
  const summary = await Campaign.run({
    seed,
    minutes: args.minutes,
    keepData: args.keepData,
    // `pnpm chaos` runs in the app's directory; a relative --data-dir means the caller's.
    ...(args.dataDir === undefined ? {} : { baseDir: resolve(process.env.INIT_CWD ?? process.cwd(), args.dataDir) })
  })
  return summary.pass ? 0 : 1
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`chaos: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`)
    process.exit(1)
  }
)
