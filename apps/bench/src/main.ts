/**
 * `pnpm bench [suite] [--mb <n>] [--partitions <n>] [--setups a,b,b-tls,c,d] [--rounds <n>] [--quick] [--profile]`: runs one named
 * benchmark suite (default `produce-fetch`), prints its table and saves `bench-results/<suite>.json`.
 * `--mb` (or `BENCH_MB`) sets the MB of record values each produce phase sends; `--partitions` the idle
 * partitions of `mirror-memory`; `--setups` which of the `mirror` suite's setups run; `--profile` runs
 * the server under `--cpu-prof` into `bench-results/` and prints its hottest functions. `--rounds` and
 * `--quick` are the `kraft` suite's (failover rounds per signal; fewer rounds and appends).
 *
 * The only entrypoint of the bench app; the hidden `__baseline` and `__mirror-memory-child` commands are
 * child processes of the suites.
 */
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import * as Baseline from "./Baseline.js"
import * as Cleaner from "./Cleaner.js"
import * as Kraft from "./Kraft.js"
import * as Mirror from "./Mirror.js"
import * as MirrorMemory from "./MirrorMemory.js"
import * as MirrorSetups from "./MirrorSetups.js"
import * as ProduceFetch from "./ProduceFetch.js"
import * as Profile from "./Profile.js"
import * as Replication from "./Replication.js"
import * as Report from "./Report.js"
import * as TransactionalProduce from "./TransactionalProduce.js"

const resultsDir = join(dirname(fileURLToPath(import.meta.url)), "..", "bench-results")
const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..")

interface SuiteArgs {
  readonly mb: number
  /** `--partitions`, when given. */
  readonly partitions: number | undefined
  readonly profileDir: string | undefined
  /** `--setups` of the mirror suite, when given. */
  readonly setups: ReadonlyArray<MirrorSetups.SetupId> | undefined
  /** `--quick` of the kraft suite. */
  readonly quick: boolean
  /** `--rounds` of the kraft suite, when given. */
  readonly rounds: number | undefined
}

type Suite =
  | { readonly description: string; readonly run: (args: SuiteArgs) => Promise<Report.Result> }
  | {
      readonly description: string
      readonly defaultMb: number
      /** A suite that prints and saves its own report. */
      readonly runAndReport: (args: SuiteArgs) => Promise<unknown>
    }

const DEFAULT_MB = 512

const suites: Readonly<Record<string, Suite>> = {
  "produce-fetch": {
    description: "Produce (acks=1, acks=-1) and Fetch throughput vs a raw loopback file baseline",
    run: (a) =>
      ProduceFetch.run({ ...ProduceFetch.defaults, totalBytes: a.mb * 1024 * 1024, cpuProfileDir: a.profileDir })
  },
  replication: {
    description: "acks=all produce to an RF=2 topic on a 2-broker cluster vs Apache Kafka, same client",
    defaultMb: Replication.DEFAULT_MB,
    runAndReport: (a) =>
      Replication.run(
        { ...Replication.defaults, totalBytes: a.mb * 1024 * 1024, cpuProfileDir: a.profileDir },
        resultsDir,
        repoRoot
      )
  },
  transactions: {
    description: `transactional vs idempotent produce (ProducerPerformance, acks=all, RF=3) on 3 brokers vs Apache Kafka, --mb MB per run (default ${TransactionalProduce.DEFAULT_MB})`,
    defaultMb: TransactionalProduce.DEFAULT_MB,
    runAndReport: (a) =>
      a.profileDir === undefined
        ? TransactionalProduce.run(
            { ...TransactionalProduce.defaults, totalBytes: a.mb * 1024 * 1024, cpuProfileDir: undefined },
            resultsDir
          )
        : fail("transactions has no --profile")
  },
  cleaner: {
    description: `log cleaner over --mb MB (default ${Cleaner.DEFAULT_MB}) of updates to ${Cleaner.defaults.keys} keys vs a read+write copy of the same segments: MB/s, CPU-s per MB`,
    defaultMb: Cleaner.DEFAULT_MB,
    runAndReport: (a) =>
      a.profileDir === undefined
        ? Cleaner.run({ ...Cleaner.defaults, totalBytes: a.mb * 1024 * 1024 }, resultsDir)
        : fail("cleaner has no --profile")
  },
  mirror: {
    description: `(a) Kafka -> MirrorMaker 2 -> Kafka, (b) Kafka -> ours, (b-tls) (b) over TLS, (c) ours -> ours, (d) Kafka follower replication: catch-up of --mb MB (default ${Mirror.DEFAULT_MB}), lag, stop of 1,000 partitions; --setups a,b,b-tls,c,d`,
    defaultMb: Mirror.DEFAULT_MB,
    runAndReport: (a) =>
      Mirror.run(
        {
          ...Mirror.defaults,
          ...(a.setups === undefined ? {} : { setups: a.setups }),
          totalBytes: a.mb * 1024 * 1024,
          cpuProfileDir: a.profileDir
        },
        resultsDir,
        repoRoot
      )
  },
  kraft: {
    description: `KRaft metadata commit latency (1 and 3 voter processes, ~100 B records, vs write+fsync) and controller failover after SIGKILL/SIGSTOP of the leader (--rounds per signal, default ${Kraft.defaults.rounds}; --quick: ${Kraft.quick.rounds} rounds, fewer appends)`,
    defaultMb: DEFAULT_MB,
    runAndReport: (a) =>
      a.profileDir === undefined
        ? Kraft.run(
            { ...(a.quick ? Kraft.quick : Kraft.defaults), ...(a.rounds === undefined ? {} : { rounds: a.rounds }) },
            resultsDir
          )
        : fail("kraft has no --profile")
  },
  "mirror-memory": {
    description: `heap and RSS per idle mirrored vs plain partition of one destination broker (--partitions, default ${MirrorMemory.DEFAULT_PARTITIONS})`,
    defaultMb: DEFAULT_MB,
    runAndReport: (a) =>
      MirrorMemory.run(
        { ...MirrorMemory.defaults, partitions: a.partitions ?? MirrorMemory.DEFAULT_PARTITIONS },
        resultsDir
      )
  }
}

const usage = `usage: pnpm bench [${Object.keys(suites).join("|")}] [--mb <n>] [--partitions <n>] [--setups a,b,b-tls,c,d] [--rounds <n>] [--quick] [--profile]
${Object.entries(suites)
  .map(([name, s]) => `  ${name}: ${s.description}`)
  .join("\n")}`

const fail = (message: string): never => {
  process.stderr.write(`${message}\n${usage}\n`)
  process.exit(2)
}

const main = async (): Promise<void> => {
  const argv = process.argv.slice(2)
  if (argv[0] === Baseline.CHILD_COMMAND) return Baseline.runChild(argv[1] ?? fail("missing baseline file"))
  if (argv[0] === MirrorMemory.CHILD_COMMAND)
    return MirrorMemory.runChild(argv[1] ?? fail("missing mirror-memory child settings"))
  let suiteName = "produce-fetch"
  let mbArg = process.env["BENCH_MB"]
  let partitionsArg: string | undefined
  let setupsArg: string | undefined
  let profile = false
  let quick = false
  let roundsArg: string | undefined
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    if (a === "--profile") profile = true
    else if (a === "--quick") quick = true
    else if (a === "--rounds") roundsArg = argv[++i] ?? fail("--rounds needs a number")
    else if (a.startsWith("--rounds=")) roundsArg = a.slice(9)
    else if (a === "--mb") mbArg = argv[++i] ?? fail("--mb needs a number")
    else if (a.startsWith("--mb=")) mbArg = a.slice(5)
    else if (a === "--partitions") partitionsArg = argv[++i] ?? fail("--partitions needs a number")
    else if (a.startsWith("--partitions=")) partitionsArg = a.slice(13)
    else if (a === "--setups") setupsArg = argv[++i] ?? fail("--setups needs a list such as a,b,b-tls,c,d")
    else if (a.startsWith("--setups=")) setupsArg = a.slice(9)
    else if (a === "--help" || a === "-h") {
      process.stdout.write(`${usage}\n`)
      return
    } else if (!a.startsWith("-") && a in suites) suiteName = a
    else fail(`unknown argument "${a}"`)
  }
  const suite = suites[suiteName]!
  const mb = mbArg === undefined ? ("defaultMb" in suite ? suite.defaultMb : DEFAULT_MB) : Number(mbArg)
  if (!Number.isFinite(mb) || mb <= 0) fail("--mb must be a positive number")
  const partitions = partitionsArg === undefined ? undefined : Number(partitionsArg)
  if (partitions !== undefined && (!Number.isInteger(partitions) || partitions < 100 || partitions % 100 !== 0))
    fail("--partitions must be a positive multiple of 100")
  const setups = setupsArg === undefined ? undefined : setupsArg.split(",").map((x) => x.trim())
  const isSetup = (x: string): x is MirrorSetups.SetupId => x in MirrorSetups.labels
  if (setups !== undefined && (setups.length === 0 || !setups.every(isSetup)))
    fail("--setups must list some of a, b, b-tls, c, d")
  const setupIds = setups?.filter(isSetup)
  const rounds = roundsArg === undefined ? undefined : Number(roundsArg)
  if (rounds !== undefined && (!Number.isInteger(rounds) || rounds < 1)) fail("--rounds must be a positive integer")
  if ((quick || rounds !== undefined) && suiteName !== "kraft")
    fail("--quick and --rounds are options of the kraft suite")
  const args: SuiteArgs = {
    mb,
    partitions,
    setups: setupIds,
    quick,
    rounds,
    profileDir: profile ? resultsDir : undefined
  }
  if ("runAndReport" in suite) {
    await suite.runAndReport(args)
    return
  }
  const started = Date.now()
  const result = await suite.run(args)
  process.stdout.write(`\n${suiteName} (${mb} MB of record values per produce phase)\n`)
  process.stdout.write(`${Report.table(result.rows)}\n`)
  process.stdout.write(
    `server peak RSS ${result.serverPeakRssMb.toFixed(0)} MB, baseline peak RSS ${result.baselinePeakRssMb.toFixed(0)} MB\n`
  )
  const file = join(resultsDir, `${suiteName}.json`)
  Report.save(file, result)
  process.stdout.write(`saved ${file}\n`)
  if (profile) {
    const prof = Profile.newest(resultsDir, started)
    if (prof === undefined) process.stdout.write("no CPU profile was written (did the server exit cleanly?)\n")
    else {
      // Only the samples taken while a measured phase ran, so start-up and module loading stay out.
      const measured = Profile.topFrames(prof, 25, repoRoot, result.serverWindows)
      process.stdout.write(`\nCPU profile ${prof}\nduring the measured phases: ${Profile.format(measured)}\n`)
    }
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`bench failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`)
  process.exit(1)
})
