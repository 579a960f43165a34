/**
 * Free TCP ports on loopback for test peers. A port is free at the moment it is handed out; the caller
 * binds it soon after. Ports asked for together are distinct, because they are held open until all of
 * them are known.
 *
 * Two things make a port handed out here safe to bind a moment later, even with many test processes on
 * one machine:
 * - Ports come from below the kernel's ephemeral range (`net.ipv4.ip_local_port_range`, 32768 and up
 *   by default), so no outgoing connection of any process is given one as its local port in between.
 * - Every port heads a block of `BLOCK` consecutive free ports, all held while they are checked: an
 *   embedded cluster started with `--port P` listens on P, P+1, ... (one per broker), and `metrics.port`
 *   M serves on M, M+1, ...; a block keeps those free as well. Blocks are aligned, so two processes
 *   never hold overlapping blocks, and one process never hands out a block twice.
 *
 * It owns only the short-lived probe sockets it opens.
 */
import { readFileSync } from "node:fs"
import { createServer, type Server } from "node:net"

const LOOPBACK = "127.0.0.1"

/** Consecutive ports behind every port handed out (the port itself and BLOCK - 1 after it). */
export const BLOCK = 8

const LOWEST = 20_000
const ATTEMPTS = 200

/** The first port of the kernel's ephemeral range (32768 unless the machine says otherwise). */
const ephemeralStart = (): number => {
  try {
    const [first] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)
    const n = Number(first)
    return Number.isInteger(n) && n > LOWEST + BLOCK * 64 ? n : 32_768
  } catch {
    return 32_768
  }
}

const HIGHEST = ephemeralStart()
const BLOCKS = Math.floor((HIGHEST - LOWEST) / BLOCK)
const handedOut = new Set<number>()

const listen = (port: number): Promise<Server | undefined> =>
  new Promise((resolve) => {
    const server = createServer()
    server.unref()
    server.once("error", () => resolve(undefined))
    server.listen(port, LOOPBACK, () => resolve(server))
  })

const close = (server: Server): Promise<void> => new Promise((resolve) => server.close(() => resolve()))

/** Binds the whole block at `base`; its servers when every port in it was free, else none (all closed). */
const holdBlock = async (base: number): Promise<ReadonlyArray<Server> | undefined> => {
  const held: Array<Server> = []
  for (let p = base; p < base + BLOCK; p++) {
    const server = await listen(p)
    if (server === undefined) {
      await Promise.all(held.map(close))
      return undefined
    }
    held.push(server)
  }
  return held
}

/** A random aligned block base in [LOWEST, HIGHEST). */
const randomBase = (): number => LOWEST + Math.floor(Math.random() * BLOCKS) * BLOCK

/**
 * `count` distinct ports that were free a moment ago on 127.0.0.1, each with its block free behind it.
 * `candidate` proposes block bases (random aligned ones by default; tests propose their own).
 */
export const freePorts = async (
  count: number,
  candidate: () => number = randomBase
): Promise<ReadonlyArray<number>> => {
  const held: Array<Server> = []
  const ports: Array<number> = []
  try {
    for (let attempt = 0; ports.length < count; attempt++) {
      if (attempt >= ATTEMPTS * count) {
        throw new Error(`no block of ${BLOCK} free ports found between ${LOWEST} and ${HIGHEST}`)
      }
      if (handedOut.size >= BLOCKS) handedOut.clear()
      const base = candidate()
      if (handedOut.has(base)) continue
      const servers = await holdBlock(base)
      if (servers === undefined) continue
      held.push(...servers)
      handedOut.add(base)
      ports.push(base)
    }
    return ports
  } finally {
    await Promise.all(held.map(close))
  }
}

/** One port that was free a moment ago on 127.0.0.1 (with its block free behind it). */
export const freePort = async (): Promise<number> => (await freePorts(1))[0]!
