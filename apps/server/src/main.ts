#!/usr/bin/env node
/**
 * `clustermirror server --port <port> --data-dir <dir> [--config <file>] [--host <host>] [--metrics-port <port>]`
 * `clustermirror mirrors --bootstrap-server <host:port> <action> ...`
 * `clustermirror acls --bootstrap-server <host:port> --add|--remove|--list ...`
 *
 * The only entrypoint of the server app: builds the broker from its config and runs it until SIGTERM
 * or SIGINT, then shuts down cleanly (sockets closed, logs flushed and closed). `mirrors` runs the
 * cluster-mirror command of `@clustermirror/cli` (the same as `clustermirror-mirrors`), `acls` its ACL
 * command (kafka-acls' options, plus `--cluster-mirror`).
 */
import * as MirrorsCommand from "@clustermirror/cli"
import { BrokerConfig, SaslConfig } from "@clustermirror/broker-config"
import { Node } from "@clustermirror/broker"
import { Effect, Exit, Fiber } from "effect"

const usage = `usage: clustermirror server [--port <port>] [--data-dir <dir>] [--config <file>] [--host <host>] [--node-id <id>] [--embedded <brokers> [--embedded-controllers <n>]] [--metrics-port <port>] [--add-scram 'SCRAM-SHA-512=[name=<user>,password=<password>]' ...]
       clustermirror mirrors --bootstrap-server <host:port> <action> ...   (cluster mirrors; --help for the actions)
       clustermirror acls --bootstrap-server <host:port> --add|--remove|--list ...   (ACLs; --help for the options)`

const parseArgs = (argv: ReadonlyArray<string>): Map<string, string> => {
  const out = new Map<string, string>()
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    if (!a.startsWith("--")) throw new Error(`unexpected argument "${a}"\n${usage}`)
    const eq = a.indexOf("=")
    const put = (k: string, v: string) =>
      // --add-scram repeats (one credential each), as with kafka-storage format.
      out.set(k, k === "add-scram" && out.has(k) ? `${out.get(k)}\n${v}` : v)
    if (eq > 0) put(a.slice(2, eq), a.slice(eq + 1))
    else {
      const v = argv[i + 1]
      if (v === undefined || v.startsWith("--")) throw new Error(`missing value for ${a}\n${usage}`)
      put(a.slice(2), v)
      i++
    }
  }
  return out
}

/**
 * `listeners` with `--host` / `--port` applied to the client listener (the inter-broker one; a PLAINTEXT
 * one added when there is none, as on a controller), the other listeners kept.
 */
const clientListener = (config: BrokerConfig.BrokerConfig, host: string | undefined, port: string | undefined) => {
  const entry = (name: string) => `${name}://${host ?? config.host}:${port ?? config.port}`
  const name = config.interBrokerListenerName
  const others = config.listeners.filter((l) => l.name !== name).map((l) => `${l.name}://${l.host}:${l.port}`)
  return [entry(name ?? "PLAINTEXT"), ...others].join(",")
}

const buildConfig = (args: Map<string, string>): BrokerConfig.BrokerConfig => {
  let config = BrokerConfig.defaults
  const file = args.get("config")
  if (file !== undefined) config = BrokerConfig.fromFile(file, config)
  const overrides = new Map<string, string>()
  const host = args.get("host")
  const port = args.get("port")
  if (host !== undefined || port !== undefined) overrides.set("listeners", clientListener(config, host, port))
  for (const [k, v] of args) {
    if (["config", "embedded", "embedded-controllers", "port", "host", "add-scram"].includes(k)) continue
    if (k === "data-dir") overrides.set("log.dirs", v)
    else if (k === "node-id") overrides.set("node.id", v)
    else if (k === "metrics-port") overrides.set("metrics.port", v)
    else throw new Error(`unknown option --${k}\n${usage}`)
  }
  const scram = args.get("add-scram")
  const parsed = BrokerConfig.fromProperties(overrides, config)
  return scram === undefined
    ? parsed
    : { ...parsed, bootstrapScramCredentials: scram.split("\n").map(SaslConfig.parseAddScram) }
}

const log = (line: string) => process.stdout.write(`[${new Date().toISOString()}] ${line}\n`)

const main = async () => {
  const [command, ...rest] = process.argv.slice(2)
  if (command === "mirrors" || command === "acls") {
    process.exitCode = await MirrorsCommand.main(command === "acls" ? ["acls", ...rest] : rest, {
      out: (line) => process.stdout.write(`${line}\n`),
      err: (line) => process.stderr.write(`${line}\n`)
    })
    return
  }
  if (command !== "server") {
    process.stderr.write(`${usage}\n`)
    process.exit(command === undefined || command === "--help" ? 0 : 2)
  }
  let config: BrokerConfig.BrokerConfig
  let args: Map<string, string>
  try {
    args = parseArgs(rest)
    config = buildConfig(args)
  } catch (e) {
    process.stderr.write(`${e instanceof Error ? e.message : String(e)}\n`)
    process.exit(2)
  }
  const embedded = args.get("embedded")
  const brokers = embedded === undefined ? 0 : Number(embedded)
  if (embedded !== undefined && (!Number.isInteger(brokers) || brokers < 1)) {
    process.stderr.write(`--embedded takes a number of brokers\n${usage}\n`)
    process.exit(2)
  }
  const quorumArg = args.get("embedded-controllers")
  const controllers = quorumArg === undefined ? 1 : Number(quorumArg)
  if (quorumArg !== undefined && (embedded === undefined || !Number.isInteger(controllers) || controllers < 1)) {
    process.stderr.write(`--embedded-controllers takes a number of controllers, with --embedded\n${usage}\n`)
    process.exit(2)
  }
  const node = Effect.acquireRelease(
    Effect.promise(async () => {
      if (embedded === undefined) return Node.start(config, log)
      const cluster = await Node.embedded(brokers, config, log, {}, controllers)
      const at = cluster.controllerPorts.map((p) => `127.0.0.1:${p}`).join(",")
      log(
        `embedded cluster ${cluster.clusterId}: ${controllers === 1 ? "controller" : `${controllers} controllers`} on ${at}, brokers ${cluster.bootstrap}`
      )
      return cluster
    }),
    (n) => Effect.promise(() => n.close())
  )
  const program = Effect.scoped(Effect.flatMap(node, () => Effect.never))
  const fiber = Effect.runFork(program)
  const shutdown = (signal: string) => {
    log(`${signal} received, shutting down`)
    Effect.runFork(Fiber.interrupt(fiber))
  }
  process.once("SIGTERM", () => shutdown("SIGTERM"))
  process.once("SIGINT", () => shutdown("SIGINT"))
  const exit = await Effect.runPromise(Fiber.await(fiber))
  if (Exit.isFailure(exit) && !Exit.isInterrupted(exit)) {
    process.stderr.write(`server failed: ${String(exit.cause)}\n`)
    process.exit(1)
  }
  log("stopped")
  process.exit(0)
}

void main()
