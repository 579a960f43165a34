/**
 * Integration-test harness for the server process: starts `src/main.ts server` as a child process on a
 * free port with a temporary data dir and a properties config, waits for readiness, samples its RSS,
 * and hands out real clients (kcat, kafkajs) pointed at it.
 *
 * It owns only processes and temp dirs it created and removes them in `stop()`; it never inspects or
 * edits the server's data files.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Kafka, logLevel } from "kafkajs"

/** The server package directory: the child runs with it as cwd so that `tsx` and `src/main.ts` resolve. */
const serverDir = fileURLToPath(new URL("..", import.meta.url))

const READY_MARKER = "listening on"
const READY_TIMEOUT_MS = 90_000
const STOP_TIMEOUT_MS = 15_000
const RSS_SAMPLE_MS = 100
const OUTPUT_TAIL_CHARS = 16_384

/** Settings every test server gets unless the test overrides them. */
const DEFAULT_CONFIG: Readonly<Record<string, string | number | boolean>> = {
  "auto.create.topics.enable": true,
  "num.partitions": 1,
  "socket.request.max.bytes": 104857600,
  "group.initial.rebalance.delay.ms": 0
}

export interface ServerOptions {
  /** Broker/topic settings written to the `--config` properties file, over the defaults. */
  readonly config?: Readonly<Record<string, string | number | boolean>>
  /** Reuse an existing data dir (it is then not removed by `stop()`). */
  readonly dataDir?: string
}

export interface ExitInfo {
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
}

export interface KcatResult {
  readonly stdout: string
  readonly stderr: string
}

export interface ServerHandle {
  readonly port: number
  /** The current process id (changes on `restart()`). */
  readonly pid: number
  readonly dataDir: string
  /** `localhost:<port>`. */
  readonly bootstrap: string
  /** SIGTERM, wait for exit (SIGKILL after a timeout), remove the temp dirs the harness made. */
  stop(): Promise<ExitInfo>
  /** Sends `signal` and waits for the process to exit; the data dir stays for `restart()`. */
  kill(signal: NodeJS.Signals): Promise<ExitInfo>
  /** Starts a new process on the same port and data dir (stops the running one first, if any). */
  restart(): Promise<void>
  /** Current resident set size in MB (from /proc/<pid>/status VmRSS). */
  rssMb(): number
  /** Highest RSS sampled across this handle's processes, in MB. */
  peakRssMb(): number
  /** Whether the current process is still running. */
  isAlive(): boolean
  /** The process's recent stdout+stderr, for error messages. */
  output(): string
  /** Runs `kcat -b <bootstrap> ...args`; rejects on a non-zero exit with kcat's stderr. */
  kcat(args: ReadonlyArray<string>, opts?: KcatOptions): Promise<KcatResult>
  /** A kafkajs client for this server with logging off. */
  kafka(clientId?: string): Kafka
}

export interface KcatOptions {
  /** Written to kcat's stdin in one go, then stdin is closed. */
  readonly input?: string
  readonly timeoutMs?: number
}

const live = new Set<ChildProcess>()
let exitHookInstalled = false
const installExitHook = (): void => {
  if (exitHookInstalled) return
  exitHookInstalled = true
  // A crashed test worker must not leave servers behind holding ports and memory.
  process.once("exit", () => {
    for (const child of live) child.kill("SIGKILL")
  })
}

/** A port that was free a moment ago: bind :0, read the port, release it. */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const srv = createServer()
    srv.unref()
    srv.on("error", reject)
    srv.listen(0, () => {
      const address = srv.address()
      if (address === null || typeof address === "string") {
        srv.close()
        reject(new Error("no port assigned"))
        return
      }
      const port = address.port
      srv.close(() => resolve(port))
    })
  })

const readRssKb = (pid: number): number | undefined => {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8")
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)
    return m ? Number(m[1]) : undefined
  } catch {
    return undefined
  }
}

const configText = (config: Readonly<Record<string, string | number | boolean>>): string =>
  Object.entries(config)
    .map(([k, v]) => `${k}=${String(v)}`)
    .join("\n") + "\n"

const waitForExit = (child: ChildProcess, timeoutMs: number): Promise<ExitInfo | undefined> => {
  if (child.exitCode !== null || child.signalCode !== null)
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode })
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.off("exit", onExit)
      resolve(undefined)
    }, timeoutMs)
    const onExit = (code: number | null, signal: NodeJS.Signals | null): void => {
      clearTimeout(timer)
      resolve({ code, signal })
    }
    child.once("exit", onExit)
  })
}

/** Starts a server process and resolves once it printed its readiness line. */
export const startServer = async (opts: ServerOptions = {}): Promise<ServerHandle> => {
  installExitHook()
  const port = await freePort()
  const scratch = mkdtempSync(join(tmpdir(), "clustermirror-int-"))
  const dataDir = opts.dataDir ?? join(scratch, "data")
  const configFile = join(scratch, "server.properties")
  writeFileSync(configFile, configText({ ...DEFAULT_CONFIG, ...opts.config }))

  let child: ChildProcess | undefined
  let out = ""
  let peakKb = 0
  let sampler: NodeJS.Timeout | undefined

  const sample = (): void => {
    if (child?.pid === undefined) return
    const kb = readRssKb(child.pid)
    if (kb !== undefined && kb > peakKb) peakKb = kb
  }

  const launch = async (): Promise<void> => {
    out = ""
    const proc = spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        "src/main.ts",
        "server",
        "--port",
        String(port),
        "--data-dir",
        dataDir,
        "--config",
        configFile
      ],
      { cwd: serverDir, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NODE_ENV: "test" } }
    )
    child = proc
    live.add(proc)
    proc.once("exit", () => live.delete(proc))

    await new Promise<void>((resolve, reject) => {
      let settled = false
      const settle = (err?: Error): void => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        if (err) reject(err)
        else resolve()
      }
      const onData = (chunk: Buffer): void => {
        out = (out + chunk.toString("utf8")).slice(-OUTPUT_TAIL_CHARS)
        if (out.includes(READY_MARKER)) settle()
      }
      proc.stdout?.on("data", onData)
      proc.stderr?.on("data", onData)
      proc.once("error", (e) => settle(new Error(`server failed to spawn: ${e.message}`)))
      proc.once("exit", (code, signal) =>
        settle(new Error(`server exited before ready (code ${code}, signal ${signal}); output:\n${out}`))
      )
      const timer = setTimeout(() => {
        proc.kill("SIGKILL")
        settle(new Error(`server not ready within ${READY_TIMEOUT_MS} ms; output:\n${out}`))
      }, READY_TIMEOUT_MS)
    })
    sample()
    if (sampler === undefined) {
      sampler = setInterval(sample, RSS_SAMPLE_MS)
      sampler.unref()
    }
  }

  const kill = async (signal: NodeJS.Signals): Promise<ExitInfo> => {
    const proc = child
    if (proc === undefined) return { code: null, signal: null }
    sample()
    proc.kill(signal)
    const info = await waitForExit(proc, STOP_TIMEOUT_MS)
    if (info !== undefined) return info
    proc.kill("SIGKILL")
    const forced = await waitForExit(proc, STOP_TIMEOUT_MS)
    throw new Error(
      `server ignored ${signal} for ${STOP_TIMEOUT_MS} ms (then ${forced ? "SIGKILLed" : "still running"}); output:\n${out}`
    )
  }

  const stop = async (): Promise<ExitInfo> => {
    try {
      return await kill("SIGTERM")
    } finally {
      if (sampler !== undefined) clearInterval(sampler)
      sampler = undefined
      rmSync(scratch, { recursive: true, force: true })
    }
  }

  const isAlive = (): boolean => child !== undefined && child.exitCode === null && child.signalCode === null

  const kcat = (args: ReadonlyArray<string>, kopts: KcatOptions = {}): Promise<KcatResult> =>
    runKcat(["-b", `localhost:${port}`, ...args], kopts)

  try {
    await launch()
  } catch (e) {
    if (child !== undefined && isAlive()) child.kill("SIGKILL")
    rmSync(scratch, { recursive: true, force: true })
    throw e
  }

  return {
    port,
    get pid() {
      return child?.pid ?? -1
    },
    dataDir,
    bootstrap: `localhost:${port}`,
    stop,
    kill,
    restart: async () => {
      if (isAlive()) await kill("SIGTERM")
      await launch()
    },
    rssMb: () => {
      const kb = child?.pid === undefined ? undefined : readRssKb(child.pid)
      if (kb === undefined) throw new Error("server process is not running")
      if (kb > peakKb) peakKb = kb
      return kb / 1024
    },
    peakRssMb: () => {
      sample()
      return peakKb / 1024
    },
    isAlive,
    output: () => out,
    kcat,
    kafka: (clientId = "clustermirror-int") =>
      new Kafka({
        clientId,
        brokers: [`localhost:${port}`],
        logLevel: logLevel.NOTHING,
        connectionTimeout: 10_000,
        requestTimeout: 60_000
      })
  }
}

const runKcat = (args: ReadonlyArray<string>, opts: KcatOptions): Promise<KcatResult> =>
  new Promise((resolve, reject) => {
    const timeoutMs = opts.timeoutMs ?? 180_000
    const proc = spawn("kcat", [...args], {
      stdio: [opts.input === undefined ? "ignore" : "pipe", "pipe", "pipe"]
    })
    const stdout: Buffer[] = []
    const stderr: Buffer[] = []
    proc.stdout?.on("data", (c: Buffer) => stdout.push(c))
    proc.stderr?.on("data", (c: Buffer) => stderr.push(c))
    const timer = setTimeout(() => proc.kill("SIGKILL"), timeoutMs)
    proc.once("error", (e) => {
      clearTimeout(timer)
      reject(new Error(`kcat failed to spawn: ${e.message}`))
    })
    proc.once("close", (code, signal) => {
      clearTimeout(timer)
      const result = { stdout: Buffer.concat(stdout).toString("utf8"), stderr: Buffer.concat(stderr).toString("utf8") }
      if (code === 0) resolve(result)
      else
        reject(
          new Error(
            `kcat ${args.join(" ")} exited with ${code ?? signal}${signal === "SIGKILL" ? " (timeout)" : ""}:\n${result.stderr}`
          )
        )
    })
    if (opts.input !== undefined && proc.stdin) {
      // kcat may exit early on an error; its stderr then says why, not the broken pipe.
      proc.stdin.on("error", () => {})
      proc.stdin.end(opts.input)
    }
  })

/** Polls `check` until it returns a value other than `undefined`, or fails with `what` after `timeoutMs`. */
export const eventually = async <A>(
  what: string,
  check: () => Promise<A | undefined> | A | undefined,
  timeoutMs = 60_000,
  intervalMs = 100
): Promise<A> => {
  const deadline = Date.now() + timeoutMs
  let lastError: unknown
  for (;;) {
    try {
      const a = await check()
      if (a !== undefined) return a
    } catch (e) {
      lastError = e
    }
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastError ? `: ${String(lastError)}` : ""}`)
    await new Promise((r) => setTimeout(r, intervalMs))
  }
}

/** Peak RSS budget for the server across the integration tests. */
export const PEAK_RSS_LIMIT_MB = 300
