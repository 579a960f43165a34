/**
 * Our own server (`apps/server`) as a separate process, for integration tests and benchmarks: spawned
 * with `node --import tsx src/main.ts server ...` on a free port with a temporary data dir, ready once it
 * has printed its "listening on" line(s), with RSS/CPU sampling and stop/kill/restart.
 *
 * Extra CLI arguments pass through (`--config` with roles, `--embedded N`, ...), and the number of
 * listening lines to wait for is configurable, so one helper serves a single broker and a whole
 * embedded cluster. It owns only the process, the temp dir it created and the log file it is given (the
 * whole output of every process, appended); it never touches the server's data files.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { appendFileSync, createWriteStream, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Effect, type Scope } from "effect"
import * as Kcat from "./Kcat.js"
import * as Ports from "./Ports.js"
import * as Properties from "./Properties.js"
import * as Process from "./internal/Process.js"
import { PeerStartError, PeerStopError } from "./TestkitError.js"

export type ExitInfo = Process.ExitInfo

/** The server app; the child runs with it as cwd so that `tsx` and `src/main.ts` resolve. */
export const serverDir: string = fileURLToPath(new URL("../../../apps/server/", import.meta.url))

/** The line the server prints once a listener accepts connections. */
export const READY_MARKER = "listening on"

const READY_TIMEOUT_MS = 120_000
const STOP_TIMEOUT_MS = 30_000
const OUTPUT_TAIL_CHARS = 64 * 1024
const RSS_SAMPLE_MS = 100

/** Broker settings that make a test server convenient (auto-created single-partition topics, no rebalance delay). */
export const TEST_DEFAULTS: Properties.Properties = {
  "auto.create.topics.enable": true,
  "num.partitions": 1,
  "socket.request.max.bytes": 104857600,
  "group.initial.rebalance.delay.ms": 0
}

export interface ServerOptions {
  /** Properties written to a temp file passed as `--config` (nothing is added to them; see `TEST_DEFAULTS`). */
  readonly config?: Properties.Properties
  /** An existing config file to pass as `--config` instead of `config`. */
  readonly configFile?: string
  /** `--port`: a given port, a free one (default), or `false` to leave the listeners to the config. */
  readonly port?: number | false
  /** `--data-dir`: a given dir (kept on stop), a temp one (default), or `false` to leave it to the config. */
  readonly dataDir?: string | false
  /** Further CLI arguments after the generated ones, e.g. `["--embedded", "3"]`. */
  readonly args?: ReadonlyArray<string>
  /** The sub-command (default `server`). */
  readonly command?: string
  /** How many "listening on" lines mean ready (default 1; e.g. controller + N brokers when embedded). */
  readonly readyLines?: number
  /** Flags for `node` itself, before `--import tsx`. */
  readonly nodeArgs?: ReadonlyArray<string>
  /** Write a V8 CPU profile (`--cpu-prof`) into this directory when the server exits. */
  readonly cpuProfileDir?: string
  /** Environment over `process.env` (which always gets `NODE_ENV=test`). */
  readonly env?: Readonly<Record<string, string>>
  readonly readyTimeoutMs?: number
  readonly stopTimeoutMs?: number
  /** Prefix of the temp dir (default `clustermirror-server-`). */
  readonly tempPrefix?: string
  /** Appends the complete stdout+stderr of every process of this handle to this file (kept on stop). */
  readonly logFile?: string
}

export interface ServerHandle {
  /** The `--port` passed, else the first port the server reported listening on. */
  readonly port: number
  /** `127.0.0.1:<port>`. */
  readonly bootstrap: string
  /** The current process id (changes on `restart()`). */
  readonly pid: number
  /** The data dir passed with `--data-dir`, or `undefined` when left to the config. */
  readonly dataDir: string | undefined
  /** The temp dir owned by this handle (config file, default data dir); removed by `stop()`. */
  readonly scratchDir: string
  /** Every port the current process reported listening on, in order. */
  ports(): ReadonlyArray<number>
  /** SIGTERM, wait for exit (SIGKILL after a timeout), remove the temp dir. */
  stop(): Promise<ExitInfo>
  /** Sends `signal` and waits for exit; the data dir stays for `restart()`. */
  kill(signal: NodeJS.Signals): Promise<ExitInfo>
  /** Starts a new process with the same arguments and data dir (SIGTERMs the running one first). */
  restart(): Promise<void>
  /** Current resident set size in MB. */
  rssMb(): number
  /** Highest kernel-tracked RSS (VmHWM) across this handle's processes, in MB. */
  peakRssMb(): number
  /** CPU seconds (user + system) of the current process; its last reading once it exited. */
  cpuSeconds(): number
  isAlive(): boolean
  /** The process's recent stdout+stderr, for error messages. */
  output(): string
  /** Runs `kcat -b <bootstrap> ...args`. */
  kcat(args: ReadonlyArray<string>, opts?: Kcat.KcatOptions): Promise<Kcat.KcatResult>
}

const LISTENING = /listening on \S*:(\d+)/

/** The ports in the "listening on host:port" lines of `output`, in order. */
export const listeningPorts = (output: string): ReadonlyArray<number> =>
  output.split("\n").flatMap((line) => {
    const m = LISTENING.exec(line)
    return m === null ? [] : [Number(m[1])]
  })

/** The server's command line (after `node`), from resolved options. */
export const commandLine = (opts: {
  readonly command: string
  readonly port: number | undefined
  readonly dataDir: string | undefined
  readonly configFile: string | undefined
  readonly args: ReadonlyArray<string>
  readonly nodeArgs: ReadonlyArray<string>
}): ReadonlyArray<string> => [
  ...opts.nodeArgs,
  "--import",
  "tsx",
  "src/main.ts",
  opts.command,
  ...(opts.port === undefined ? [] : ["--port", String(opts.port)]),
  ...(opts.dataDir === undefined ? [] : ["--data-dir", opts.dataDir]),
  ...(opts.configFile === undefined ? [] : ["--config", opts.configFile]),
  ...opts.args
]

/** Starts the server and resolves once it printed `readyLines` listening lines. */
export const start = async (opts: ServerOptions = {}): Promise<ServerHandle> => {
  const scratch = mkdtempSync(join(tmpdir(), opts.tempPrefix ?? "clustermirror-server-"))
  Process.trackDir(scratch)
  const readyLines = opts.readyLines ?? 1
  const readyTimeoutMs = opts.readyTimeoutMs ?? READY_TIMEOUT_MS
  const stopTimeoutMs = opts.stopTimeoutMs ?? STOP_TIMEOUT_MS
  let child: ChildProcess | undefined
  let output = new Process.OutputTail(OUTPUT_TAIL_CHARS)
  let listening: number[] = []
  let peakMb = 0
  let lastCpu = 0
  let sampler: NodeJS.Timeout | undefined

  const sample = (): void => {
    const pid = child?.pid
    if (pid === undefined) return
    const mb = Process.peakRssMb(pid)
    if (mb !== undefined && mb > peakMb) peakMb = mb
    const cpu = Process.cpuSeconds(pid)
    if (cpu !== undefined) lastCpu = cpu
  }

  const cleanupScratch = (): void => rmSync(scratch, { recursive: true, force: true })

  let line: ReadonlyArray<string>
  let port: number | undefined
  let dataDir: string | undefined
  try {
    port = opts.port === false ? undefined : (opts.port ?? (await Ports.freePort()))
    dataDir = opts.dataDir === false ? undefined : (opts.dataDir ?? join(scratch, "data"))
    let configFile = opts.configFile
    if (configFile === undefined && opts.config !== undefined) {
      configFile = join(scratch, "server.properties")
      writeFileSync(configFile, Properties.render(opts.config))
    }
    const nodeArgs = [...(opts.nodeArgs ?? [])]
    if (opts.cpuProfileDir !== undefined) {
      mkdirSync(opts.cpuProfileDir, { recursive: true })
      nodeArgs.push("--cpu-prof", "--cpu-prof-dir", opts.cpuProfileDir)
    }
    line = commandLine({
      command: opts.command ?? "server",
      port,
      dataDir,
      configFile,
      args: opts.args ?? [],
      nodeArgs
    })
  } catch (e) {
    cleanupScratch()
    throw e
  }

  const launch = async (): Promise<void> => {
    listening = []
    const proc = spawn(process.execPath, [...line], {
      cwd: serverDir,
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, NODE_ENV: "test", ...opts.env }
    })
    child = proc
    Process.track(proc)
    if (opts.logFile !== undefined) {
      appendFileSync(opts.logFile, `--- ${new Date().toISOString()} pid ${proc.pid} started ---\n`)
      const log = createWriteStream(opts.logFile, { flags: "a" })
      proc.stdout?.pipe(log, { end: false })
      proc.stderr?.pipe(log, { end: false })
      proc.once("close", (code, signal) =>
        log.end(`--- ${new Date().toISOString()} pid ${proc.pid} exited (code ${code}, signal ${signal}) ---\n`)
      )
    }
    await new Promise<void>((resolve, reject) => {
      let settled = false
      const settle = (err?: Error): void => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        if (err) reject(err)
        else resolve()
      }
      const fail = (message: string): void =>
        settle(new PeerStartError({ peer: "server", output: output.toString(), message }))
      output = new Process.OutputTail(OUTPUT_TAIL_CHARS, (l) => {
        const m = LISTENING.exec(l)
        if (m === null) return
        listening.push(Number(m[1]))
        if (listening.length >= readyLines) settle()
      })
      output.attach(proc)
      proc.once("error", (e) => fail(`server failed to spawn: ${e.message}`))
      proc.once("exit", (code, signal) =>
        fail(`server exited before ready (code ${code}, signal ${signal}); output:\n${output.toString()}`)
      )
      const timer = setTimeout(() => {
        proc.kill("SIGKILL")
        fail(`server not ready within ${readyTimeoutMs} ms; output:\n${output.toString()}`)
      }, readyTimeoutMs)
    })
    sample()
    if (sampler === undefined) {
      // VmHWM disappears with the process, so keep sampling to have the peak after a stop or crash.
      sampler = setInterval(sample, RSS_SAMPLE_MS)
      sampler.unref()
    }
  }

  const isAlive = (): boolean => child !== undefined && !Process.hasExited(child)

  const kill = async (signal: NodeJS.Signals): Promise<ExitInfo> => {
    const proc = child
    if (proc === undefined) return { code: null, signal: null }
    sample()
    if (!Process.hasExited(proc)) proc.kill(signal)
    const info = await Process.waitForExit(proc, stopTimeoutMs)
    if (info !== undefined) return info
    proc.kill("SIGKILL")
    const forced = await Process.waitForExit(proc, stopTimeoutMs)
    throw new PeerStopError({
      peer: "server",
      output: output.toString(),
      message: `server ignored ${signal} for ${stopTimeoutMs} ms (then ${forced ? "SIGKILLed" : "still running"}); output:\n${output.toString()}`
    })
  }

  try {
    await launch()
  } catch (e) {
    if (isAlive()) child?.kill("SIGKILL")
    if (sampler !== undefined) clearInterval(sampler)
    cleanupScratch()
    throw e
  }

  const effectivePort = port ?? listening[0]!
  const bootstrap = `127.0.0.1:${effectivePort}`
  return {
    port: effectivePort,
    bootstrap,
    get pid() {
      return child?.pid ?? -1
    },
    dataDir,
    scratchDir: scratch,
    ports: () => [...listening],
    stop: async () => {
      try {
        return await kill("SIGTERM")
      } finally {
        if (sampler !== undefined) clearInterval(sampler)
        sampler = undefined
        cleanupScratch()
      }
    },
    kill,
    restart: async () => {
      if (isAlive()) await kill("SIGTERM")
      await launch()
    },
    rssMb: () => {
      const mb = child?.pid === undefined ? undefined : Process.rssMb(child.pid)
      if (mb === undefined) throw new Error("server process is not running")
      return mb
    },
    peakRssMb: () => {
      sample()
      return peakMb
    },
    cpuSeconds: () => {
      sample()
      return lastCpu
    },
    isAlive,
    output: () => output.toString(),
    kcat: Kcat.forBootstrap(bootstrap)
  }
}

/** `start` as a scoped resource (for `@effect/vitest`'s `layer` or `it.scoped`): stopped when the scope closes. */
export const scoped = (opts: ServerOptions = {}): Effect.Effect<ServerHandle, PeerStartError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: () => start(opts),
      catch: (e) =>
        e instanceof PeerStartError
          ? e
          : new PeerStartError({ peer: "server", output: "", message: `server failed to start: ${String(e)}` })
    }),
    (server) => Effect.promise(() => server.stop())
  )
