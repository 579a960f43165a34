/**
 * One KRaft voter as a child process of the `kraft` suite: a `RaftRuntime` on a data dir with real
 * fsyncs, the raft APIs served on a TCP listener (`RaftHandlers`), the other voters reached with
 * `RaftTransport.tcp`. The parent drives it over the IPC channel: the voter reports its port once it
 * listens, starts its runtime when given the voters' endpoints, pushes every change of the leader it
 * knows, appends records on request (timing each append until it is committed) and answers status
 * requests (leader, epoch, high watermark).
 *
 * The child side is this file run as a script (`node --import tsx KraftVoter.ts <settings>`), so that a
 * voter loads only the raft packages; the parent side is `spawn`. A voter exits when the parent goes.
 */
import { RequestChannel, SocketServer } from "@clustermirror/network"
import { RaftConfig } from "@clustermirror/raft"
import { RaftHandlers, RaftRuntime, RaftTransport } from "@clustermirror/raft-runtime"
import { Effect, Either, Scope } from "effect"
import { Buffer } from "node:buffer"
import { type ChildProcess, spawn as spawnProcess } from "node:child_process"
import { dirname } from "node:path"
import { fileURLToPath } from "node:url"

/** The quorum timeouts a voter runs with (`controller.quorum.*`), in ms. */
export interface Timeouts {
  readonly electionTimeoutMs: number
  readonly fetchTimeoutMs: number
  readonly electionBackoffMaxMs: number
  readonly requestTimeoutMs: number
  /** How long a follower waits before fetching again after an empty fetch (our runtime has no long poll). */
  readonly fetchWaitMs: number
}

export interface Settings {
  readonly id: number
  readonly voters: ReadonlyArray<number>
  readonly dataDir: string
  /** 0 for any free port; a restarted voter gets its previous port, which the others know. */
  readonly port: number
  readonly timeouts: Timeouts
}

export interface LeaderView {
  readonly leaderId: number
  readonly leaderEpoch: number
}

export interface Status extends LeaderView {
  readonly highWatermark: number
}

/** Appends of one request: the commit latency of each that committed, in microseconds. */
export interface Appended {
  readonly latenciesUs: ReadonlyArray<number>
  /** Appends refused or lost because this voter did not lead (or stopped leading). */
  readonly notLeader: number
  readonly seconds: number
}

type ToParent =
  | { readonly type: "listening"; readonly port: number }
  | { readonly type: "started" }
  | ({ readonly type: "leader" } & LeaderView)
  | ({ readonly type: "status"; readonly req: number } & Status)
  | ({ readonly type: "appended"; readonly req: number } & Appended)

type ToChild =
  | { readonly type: "start"; readonly endpoints: ReadonlyArray<RaftConfig.VoterEndpoint> }
  | { readonly type: "status"; readonly req: number }
  | {
      readonly type: "append"
      readonly req: number
      readonly count: number
      readonly recordBytes: number
      readonly depth: number
    }

const isObject = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null

/** Runs `count` appends of one `recordBytes` record each, `depth` in flight; times each to its commit. */
const appendTimed = async (
  runtime: RaftRuntime.RaftRuntime,
  count: number,
  recordBytes: number,
  depth: number
): Promise<Appended> => {
  const latenciesUs: Array<number> = []
  let notLeader = 0
  let next = 0
  const t0 = process.hrtime.bigint()
  const worker = async (): Promise<void> => {
    while (next < count) {
      const i = next++
      const value = Buffer.alloc(recordBytes, i % 251)
      const start = process.hrtime.bigint()
      const result = await Effect.runPromise(Effect.either(runtime.append([value])))
      if (Either.isRight(result)) latenciesUs.push(Number(process.hrtime.bigint() - start) / 1000)
      else notLeader++
    }
  }
  await Promise.all(Array.from({ length: Math.max(1, Math.min(depth, count)) }, worker))
  return { latenciesUs, notLeader, seconds: Number(process.hrtime.bigint() - t0) / 1e9 }
}

/** The child process: one voter, until the parent disconnects. */
export const runChild = async (settings: Settings): Promise<void> => {
  const send = (m: ToParent): void => {
    process.send?.(m)
  }
  const handlers = new RequestChannel.Handlers()
  const server = await SocketServer.start({
    host: "127.0.0.1",
    port: settings.port,
    maxFrameBytes: 16 * 1024 * 1024,
    handle: handlers.frameHandler(() => undefined),
    log: () => undefined
  })
  const scope = Effect.runSync(Scope.make())
  let runtime: RaftRuntime.RaftRuntime | null = null
  process.on("disconnect", () => process.exit(0))

  const start = async (endpoints: ReadonlyArray<RaftConfig.VoterEndpoint>): Promise<void> => {
    const t = settings.timeouts
    const config = RaftConfig.make(settings.id, settings.voters, { clusterId: "kraft-bench", ...t })
    const r = await Effect.runPromise(
      Effect.gen(function* () {
        const transport = yield* RaftTransport.tcp({
          voters: endpoints,
          nodeId: settings.id,
          requestTimeoutMs: t.requestTimeoutMs
        })
        return yield* RaftRuntime.make({ config, dataDir: settings.dataDir, transport })
      }).pipe(Scope.extend(scope))
    )
    RaftHandlers.register(handlers, r, { voters: settings.voters })
    runtime = r
    let last: LeaderView = { leaderId: -2, leaderEpoch: -1 }
    // The leader this voter knows, pushed on every change (sampled every 2 ms, a synchronous read).
    setInterval(() => {
      const view = Effect.runSync(r.leader)
      if (view.leaderId === last.leaderId && view.leaderEpoch === last.leaderEpoch) return
      last = view
      send({ type: "leader", ...view })
    }, 2)
    send({ type: "started" })
  }

  process.on("message", (m: unknown) => {
    if (!isObject(m)) return
    const message = m as ToChild
    switch (message.type) {
      case "start":
        start(message.endpoints).catch((e: unknown) => {
          process.stderr.write(`voter ${settings.id} failed to start: ${String(e)}\n`)
          process.exit(1)
        })
        return
      case "status": {
        if (runtime === null)
          return send({ type: "status", req: message.req, leaderId: -1, leaderEpoch: -1, highWatermark: 0 })
        const view = Effect.runSync(runtime.leader)
        const highWatermark = Effect.runSync(runtime.highWatermark)
        return send({ type: "status", req: message.req, ...view, highWatermark })
      }
      case "append": {
        const r = runtime
        if (r === null)
          return send({ type: "appended", req: message.req, latenciesUs: [], notLeader: message.count, seconds: 0 })
        appendTimed(r, message.count, message.recordBytes, message.depth).then((a) =>
          send({ type: "appended", req: message.req, ...a })
        )
        return
      }
    }
  })
  send({ type: "listening", port: server.port })
}

/** The parent's handle on one voter process. */
export interface VoterProcess {
  readonly id: number
  readonly port: number
  readonly pid: number
  /** The leader the voter last reported; `leaderId` -1 when it knows none, -2 before it reported. */
  readonly view: () => LeaderView
  readonly start: (endpoints: ReadonlyArray<RaftConfig.VoterEndpoint>) => Promise<void>
  readonly status: () => Promise<Status>
  readonly append: (count: number, recordBytes: number, depth: number) => Promise<Appended>
  readonly signal: (signal: NodeJS.Signals) => void
  /** Resolves once the process has exited. */
  readonly exited: Promise<void>
  /** Ends the process (SIGKILL: the log is fsynced on every commit anyway) and waits for it. */
  readonly stop: () => Promise<void>
}

const childFile = fileURLToPath(import.meta.url)

/** Starts a voter process with `settings`; resolves once it listens (its runtime starts with `start`). */
export const spawn = async (settings: Settings): Promise<VoterProcess> => {
  const child: ChildProcess = spawnProcess(
    process.execPath,
    ["--import", "tsx", childFile, JSON.stringify(settings)],
    // From the bench app's directory, where `tsx` resolves.
    { cwd: dirname(dirname(childFile)), stdio: ["ignore", "inherit", "inherit", "ipc"] }
  )
  const pid = child.pid
  if (pid === undefined) throw new Error(`voter ${settings.id} failed to spawn`)
  const killOnExit = (): void => {
    child.kill("SIGKILL")
  }
  process.once("exit", killOnExit)
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve()
    else child.once("exit", () => resolve())
  })
  exited.then(() => process.off("exit", killOnExit))

  let view: LeaderView = { leaderId: -2, leaderEpoch: -1 }
  const pending = new Map<number, (m: ToParent | { readonly type: "exited" }) => void>()
  let nextReq = 0
  let gone = false
  // A request the voter did not answer before it exited fails (a killed voter answers nothing).
  exited.then(() => {
    gone = true
    for (const [req, reply] of [...pending]) {
      pending.delete(req)
      reply({ type: "exited" })
    }
  })
  child.on("message", (m: unknown) => {
    if (!isObject(m)) return
    const message = m as ToParent
    if (message.type === "leader") {
      view = { leaderId: message.leaderId, leaderEpoch: message.leaderEpoch }
    } else if (message.type === "status" || message.type === "appended") {
      const reply = pending.get(message.req)
      pending.delete(message.req)
      reply?.(message)
    }
  })

  const once = <T extends ToParent["type"]>(type: T, what: string): Promise<Extract<ToParent, { type: T }>> =>
    new Promise((resolve, reject) => {
      const onMessage = (m: unknown): void => {
        if (isObject(m) && m["type"] === type) {
          child.off("message", onMessage)
          resolve(m as Extract<ToParent, { type: T }>)
        }
      }
      child.on("message", onMessage)
      exited.then(() => reject(new Error(`voter ${settings.id} exited before ${what}`)))
    })

  const ask = <T extends "status" | "appended">(
    type: T,
    build: (req: number) => ToChild
  ): Promise<Extract<ToParent, { type: T }>> =>
    new Promise((resolve, reject) => {
      const req = nextReq++
      pending.set(req, (m) => {
        if (m.type === "exited") reject(new Error(`voter ${settings.id} exited before answering ${type}`))
        else if (m.type === type) resolve(m as Extract<ToParent, { type: T }>)
        else reject(new Error(`voter ${settings.id} answered ${m.type} to ${type}`))
      })
      if (gone) return reject(new Error(`voter ${settings.id} has exited`))
      child.send(build(req))
    })

  const { port } = await once("listening", "listening")
  return {
    id: settings.id,
    port,
    pid,
    view: () => view,
    start: async (endpoints) => {
      const started = once("started", "starting its runtime")
      child.send({ type: "start", endpoints } satisfies ToChild)
      await started
    },
    status: async () => {
      const { type: _, req: __, ...s } = await ask("status", (req) => ({ type: "status", req }))
      return s
    },
    append: async (count, recordBytes, depth) => {
      const {
        type: _,
        req: __,
        ...a
      } = await ask("appended", (req) => ({ type: "append", req, count, recordBytes, depth }))
      return a
    },
    signal: (signal) => {
      child.kill(signal)
    },
    exited,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
      await exited
    }
  }
}

if (process.argv[1] === childFile) {
  const arg = process.argv[2]
  if (arg === undefined) {
    process.stderr.write("usage: KraftVoter.ts <settings JSON>\n")
    process.exit(2)
  }
  runChild(JSON.parse(arg) as Settings).catch((e: unknown) => {
    process.stderr.write(`voter failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`)
    process.exit(1)
  })
}
