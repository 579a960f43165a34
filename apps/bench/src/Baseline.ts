/**
 * The raw loopback baseline the broker is compared with, run in a child process like the server:
 * a sink that writes every received chunk to a file with one `fs.writeSync` each (what an append path
 * costs with no protocol, no index and no validation), and a source that reads ranges of that file back
 * with `fs.readSync` and writes them to a socket (what a fetch path costs).
 *
 * The child side (`runChild`) is started through `main.ts` with the hidden `__baseline` command; the
 * parent side (`start`) drives it with the same bytes the broker gets. Nothing here speaks Kafka.
 */
import { ProcStats } from "@clustermirror/testkit"
import { type ChildProcess, spawn } from "node:child_process"
import { closeSync, openSync, readSync, writeSync } from "node:fs"
import { connect, createServer, type Server, type Socket } from "node:net"
import { Buffer } from "node:buffer"
import { fileURLToPath } from "node:url"

export const CHILD_COMMAND = "__baseline"

const READ_CHUNK = 1024 * 1024

type ToParent =
  | { readonly type: "ready"; readonly sinkPort: number; readonly sourcePort: number }
  | { readonly type: "written"; readonly bytes: number }
type ToChild = { readonly type: "expect"; readonly bytes: number } | { readonly type: "exit" }

const isObject = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null

const listen = (server: Server): Promise<number> =>
  new Promise((resolve, reject) => {
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const a = server.address()
      if (a === null || typeof a === "string") reject(new Error("no port"))
      else resolve(a.port)
    })
  })

const drained = (socket: Socket): Promise<void> => new Promise((resolve) => socket.once("drain", resolve))

/** The child process: serves the sink and the source until told to exit. */
export const runChild = async (file: string): Promise<void> => {
  const send = (m: ToParent): void => {
    process.send?.(m)
  }
  const fd = openSync(file, "w+")
  let written = 0
  let expected = Number.POSITIVE_INFINITY
  let reported = false
  const sink = createServer((socket) => {
    socket.on("data", (chunk: Buffer) => {
      writeSync(fd, chunk)
      written += chunk.length
      if (!reported && written >= expected) {
        reported = true
        send({ type: "written", bytes: written })
      }
    })
    socket.on("error", () => socket.destroy())
  })
  // A request is 16 bytes: int64 position, int64 length; the answer is exactly that range of the file.
  const source = createServer((socket) => {
    let request = Buffer.alloc(0)
    socket.on("data", async (chunk: Buffer) => {
      request = Buffer.concat([request, chunk])
      if (request.length < 16) return
      let position = Number(request.readBigInt64BE(0))
      const end = position + Number(request.readBigInt64BE(8))
      request = request.subarray(16)
      while (position < end) {
        const buf = Buffer.allocUnsafe(Math.min(READ_CHUNK, end - position))
        const n = readSync(fd, buf, 0, buf.length, position)
        if (n === 0) break
        position += n
        if (!socket.write(n === buf.length ? buf : buf.subarray(0, n))) await drained(socket)
      }
    })
    socket.on("error", () => socket.destroy())
  })
  const sinkPort = await listen(sink)
  const sourcePort = await listen(source)
  process.on("message", (m: unknown) => {
    if (!isObject(m)) return
    if (m["type"] === "expect" && typeof m["bytes"] === "number") {
      expected = m["bytes"]
      reported = false
      if (written >= expected) {
        reported = true
        send({ type: "written", bytes: written })
      }
    } else if (m["type"] === "exit") {
      sink.close()
      source.close()
      closeSync(fd)
      process.exit(0)
    }
  })
  send({ type: "ready", sinkPort, sourcePort })
}

export interface BaselineProcess {
  readonly pid: number
  cpuSeconds(): number
  peakRssMb(): number
  /**
   * Writes `count` frames (cycling through `frames`) over `connections` sockets to the sink; resolves with
   * the byte count once the child has written every byte to its file.
   */
  produce(frames: ReadonlyArray<Buffer>, count: number, connections: number): Promise<number>
  /** Reads the first `totalBytes` of the file back over `connections` sockets, one range each. */
  fetch(totalBytes: number, connections: number): Promise<number>
  stop(): Promise<void>
}

/** Starts the baseline child, writing its file at `file`. */
export const start = async (file: string): Promise<BaselineProcess> => {
  const main = fileURLToPath(new URL("./main.ts", import.meta.url))
  // The child runs the same entrypoint under the same loader flags as this process.
  const child: ChildProcess = spawn(process.execPath, [...process.execArgv, main, CHILD_COMMAND, file], {
    stdio: ["ignore", "inherit", "inherit", "ipc"]
  })
  const pid = child.pid
  if (pid === undefined) throw new Error("baseline child failed to spawn")
  const killOnExit = (): void => {
    child.kill("SIGKILL")
  }
  process.once("exit", killOnExit)

  const waitFor = <T extends ToParent["type"]>(type: T): Promise<Extract<ToParent, { type: T }>> =>
    new Promise((resolve, reject) => {
      const onMessage = (m: unknown): void => {
        if (isObject(m) && m["type"] === type) {
          child.off("message", onMessage)
          child.off("exit", onExit)
          resolve(m as Extract<ToParent, { type: T }>)
        }
      }
      const onExit = (code: number | null): void => reject(new Error(`baseline child exited with ${code}`))
      child.on("message", onMessage)
      child.once("exit", onExit)
    })
  const tell = (m: ToChild): void => {
    child.send(m)
  }

  const { sinkPort, sourcePort } = await waitFor("ready")
  let lastPeak = 0
  const samplePeak = (): number => {
    const mb = ProcStats.peakRssMb(pid)
    if (mb !== undefined) lastPeak = Math.max(lastPeak, mb)
    return lastPeak
  }

  const open = (port: number): Promise<Socket> =>
    new Promise((resolve, reject) => {
      const s = connect({ port, host: "127.0.0.1", noDelay: true })
      s.once("error", reject)
      s.once("connect", () => resolve(s))
    })

  return {
    pid,
    cpuSeconds: () => ProcStats.cpuSeconds(pid) ?? 0,
    peakRssMb: samplePeak,
    produce: async (frames, count, connections) => {
      let totalBytes = 0
      for (let i = 0; i < count; i++) totalBytes += frames[i % frames.length]!.length
      const sockets = await Promise.all(Array.from({ length: connections }, () => open(sinkPort)))
      const done = waitFor("written")
      tell({ type: "expect", bytes: totalBytes })
      let next = 0
      // Frames are handed out in the same order as to the broker's connections.
      const pump = async (socket: Socket): Promise<void> => {
        while (next < count) {
          if (!socket.write(frames[next++ % frames.length]!)) await drained(socket)
        }
      }
      await Promise.all(sockets.map(pump))
      const { bytes } = await done
      samplePeak()
      for (const s of sockets) s.end()
      return bytes
    },
    fetch: async (totalBytes, connections) => {
      const share = Math.ceil(totalBytes / connections)
      const received = await Promise.all(
        Array.from({ length: connections }, async (_, i) => {
          const position = i * share
          const length = Math.max(0, Math.min(share, totalBytes - position))
          const socket = await open(sourcePort)
          return new Promise<number>((resolve, reject) => {
            let got = 0
            socket.on("data", (chunk: Buffer) => {
              got += chunk.length
              if (got >= length) {
                socket.end()
                resolve(got)
              }
            })
            socket.once("error", reject)
            const req = Buffer.alloc(16)
            req.writeBigInt64BE(BigInt(position), 0)
            req.writeBigInt64BE(BigInt(length), 8)
            socket.write(req)
            if (length === 0) {
              socket.end()
              resolve(0)
            }
          })
        })
      )
      samplePeak()
      return received.reduce((a, b) => a + b, 0)
    },
    stop: async () => {
      samplePeak()
      const exited = new Promise<void>((resolve) => {
        if (child.exitCode !== null) resolve()
        else child.once("exit", () => resolve())
      })
      tell({ type: "exit" })
      await exited
      process.off("exit", killOnExit)
    }
  }
}
