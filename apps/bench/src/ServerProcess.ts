/**
 * The clustermirror server as a child process for benchmarks: spawned from `apps/server` on a free port
 * with a temporary data dir, ready once it prints its listening line, stopped with SIGTERM.
 *
 * It owns only the process and the temp dir it created. Measuring (CPU, RSS) goes through `ProcStats`.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import * as ProcStats from "./ProcStats.js"

const serverDir = fileURLToPath(new URL("../../server/", import.meta.url))

const READY_MARKER = "listening on"
const READY_TIMEOUT_MS = 120_000
const STOP_TIMEOUT_MS = 30_000
const OUTPUT_TAIL_CHARS = 16_384

export interface StartOptions {
  /** Broker settings written to the properties file passed with `--config`. */
  readonly config?: Readonly<Record<string, string | number | boolean>>
  /** Write a V8 CPU profile (`--cpu-prof`) into this directory when the server exits. */
  readonly cpuProfileDir?: string
  /** Prefix of the temp dir (the data dir lives inside it). */
  readonly tempPrefix?: string
}

export interface ServerProcess {
  readonly port: number
  readonly pid: number
  readonly dataDir: string
  /** CPU seconds (user + system) the server process has used so far. */
  cpuSeconds(): number
  /** Kernel-tracked peak RSS in MB (last value seen once the process exited). */
  peakRssMb(): number
  /** Recent stdout + stderr, for error messages. */
  output(): string
  /** SIGTERM, wait for a clean exit (SIGKILL after a timeout), remove the temp dir. */
  stop(): Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

/** A port that was free a moment ago. */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const srv = createServer()
    srv.on("error", reject)
    srv.listen(0, "127.0.0.1", () => {
      const address = srv.address()
      if (address === null || typeof address === "string") {
        srv.close()
        reject(new Error("no port assigned"))
        return
      }
      srv.close(() => resolve(address.port))
    })
  })

const waitExit = (child: ChildProcess, ms: number): Promise<boolean> =>
  child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve(true)
    : new Promise((resolve) => {
        const timer = setTimeout(() => resolve(false), ms)
        child.once("exit", () => {
          clearTimeout(timer)
          resolve(true)
        })
      })

/** Starts the server and resolves once it is listening. */
export const start = async (opts: StartOptions = {}): Promise<ServerProcess> => {
  const port = await freePort()
  const scratch = mkdtempSync(join(tmpdir(), opts.tempPrefix ?? "clustermirror-bench-"))
  const dataDir = join(scratch, "data")
  const configFile = join(scratch, "server.properties")
  writeFileSync(
    configFile,
    Object.entries(opts.config ?? {})
      .map(([k, v]) => `${k}=${String(v)}\n`)
      .join("")
  )
  const nodeArgs: string[] = []
  if (opts.cpuProfileDir !== undefined) {
    mkdirSync(opts.cpuProfileDir, { recursive: true })
    nodeArgs.push("--cpu-prof", "--cpu-prof-dir", opts.cpuProfileDir)
  }
  const child = spawn(
    process.execPath,
    [
      ...nodeArgs,
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
    { cwd: serverDir, stdio: ["ignore", "pipe", "pipe"] }
  )
  const pid = child.pid
  if (pid === undefined) throw new Error("server failed to spawn")
  const killOnExit = (): void => {
    child.kill("SIGKILL")
  }
  process.once("exit", killOnExit)

  let out = ""
  let lastPeak = 0
  const samplePeak = (): number => {
    const mb = ProcStats.peakRssMb(pid)
    if (mb !== undefined) lastPeak = Math.max(lastPeak, mb)
    return lastPeak
  }
  // VmHWM disappears with the process, so keep the latest value for after the stop.
  const sampler = setInterval(samplePeak, 250)
  sampler.unref()

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
    child.stdout?.on("data", onData)
    child.stderr?.on("data", onData)
    child.once("error", (e) => settle(e))
    child.once("exit", (code, signal) => settle(new Error(`server exited (code ${code}, signal ${signal}):\n${out}`)))
    const timer = setTimeout(
      () => settle(new Error(`server not ready in ${READY_TIMEOUT_MS} ms:\n${out}`)),
      READY_TIMEOUT_MS
    )
  }).catch((e: unknown) => {
    clearInterval(sampler)
    child.kill("SIGKILL")
    process.off("exit", killOnExit)
    rmSync(scratch, { recursive: true, force: true })
    throw e
  })

  let lastCpu = 0
  return {
    port,
    pid,
    dataDir,
    cpuSeconds: () => {
      try {
        lastCpu = ProcStats.cpuSeconds(pid)
      } catch {
        // The process has exited; its last reading stands.
      }
      return lastCpu
    },
    peakRssMb: samplePeak,
    output: () => out,
    stop: async () => {
      samplePeak()
      child.kill("SIGTERM")
      // A CPU profile is written at exit and can take a while for a long run.
      if (!(await waitExit(child, STOP_TIMEOUT_MS))) {
        child.kill("SIGKILL")
        await waitExit(child, STOP_TIMEOUT_MS)
      }
      clearInterval(sampler)
      process.off("exit", killOnExit)
      rmSync(scratch, { recursive: true, force: true })
      return { code: child.exitCode, signal: child.signalCode }
    }
  }
}
