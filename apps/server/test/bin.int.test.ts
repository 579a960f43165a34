/**
 * The installed entrypoints (`bin/clustermirror.mjs`, and the CLI's `bin/clustermirror-mirrors.mjs`) run
 * the program in their own process: the PID an operator sees is the server, so SIGKILL frees its port at
 * once and SIGTERM shuts it down cleanly with exit code 0.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { connect } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { Ports } from "@clustermirror/testkit"
import { afterEach, describe, expect, it } from "vitest"

const BIN = fileURLToPath(new URL("../bin/clustermirror.mjs", import.meta.url))
const CLI_BIN = fileURLToPath(new URL("../../cli/bin/clustermirror-mirrors.mjs", import.meta.url))

interface Started {
  readonly child: ChildProcess
  readonly port: number
  readonly output: () => string
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
}

const started: Array<{ child: ChildProcess; dir: string }> = []

const startBin = async (): Promise<Started> => {
  const port = await Ports.freePort()
  const dir = mkdtempSync(join(tmpdir(), "clustermirror-bin-"))
  const child = spawn(process.execPath, [BIN, "server", "--port", String(port), "--data-dir", join(dir, "data")], {
    stdio: ["ignore", "pipe", "pipe"]
  })
  started.push({ child, dir })
  let out = ""
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal }))
  )
  await new Promise<void>((resolve, reject) => {
    const onData = (c: Buffer): void => {
      out += c.toString("utf8")
      if (out.includes("listening on")) resolve()
    }
    child.stdout?.on("data", onData)
    child.stderr?.on("data", onData)
    void exited.then(({ code, signal }) => reject(new Error(`exited early (${code ?? signal}):\n${out}`)))
    setTimeout(() => reject(new Error(`not listening after 120 s:\n${out}`)), 120_000).unref()
  })
  return { child, port, output: () => out, exited }
}

/** Whether a TCP connection to the port is accepted. */
const accepts = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const s = connect({ port, host: "127.0.0.1" })
    s.once("connect", () => {
      s.destroy()
      resolve(true)
    })
    s.once("error", () => resolve(false))
  })

afterEach(() => {
  for (const { child, dir } of started.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
    rmSync(dir, { recursive: true, force: true })
  }
})

describe("bin/clustermirror.mjs", () => {
  it("is the server process: after SIGKILL of its PID nothing listens on the port", async () => {
    const server = await startBin()
    expect(await accepts(server.port)).toBe(true)
    server.child.kill("SIGKILL")
    expect((await server.exited).signal).toBe("SIGKILL")
    expect(await accepts(server.port)).toBe(false)
  })

  it("shuts down cleanly on SIGTERM with exit code 0", async () => {
    const server = await startBin()
    server.child.kill("SIGTERM")
    expect(await server.exited).toEqual({ code: 0, signal: null })
    expect(server.output()).toContain("stopped")
    expect(await accepts(server.port)).toBe(false)
  })

  it("the mirrors CLI runs in its own process and exits with its code", async () => {
    const child = spawn(process.execPath, [CLI_BIN, "--help"], { stdio: ["ignore", "pipe", "pipe"] })
    let out = ""
    child.stdout?.on("data", (c: Buffer) => {
      out += c.toString("utf8")
    })
    const code = await new Promise<number | null>((resolve) => child.once("exit", (c) => resolve(c)))
    expect(code).toBe(0)
    expect(out).toContain("usage: clustermirror-mirrors")
  })
})
