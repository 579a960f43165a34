/**
 * Runs a fault schedule against two real clusters: per cluster one fault after another, each not before
 * its time and not before the previous one of that cluster was reverted (so the schedule's "one node
 * down per cluster" holds even when restarts are slow), the two clusters in parallel. Prints one line
 * when a fault starts and one when it is reverted, with the time offset into the fault phase.
 *
 * It signals and restarts only the processes of the clusters it is given; `revertAll` leaves every node
 * running and resumed.
 */
import { type ClusterClient, Connection } from "@clustermirror/client"
import { DescribeCluster, ElectLeaders, Errors } from "@clustermirror/protocol"
import type { ProcessCluster } from "@clustermirror/testkit"
import { reasonOf } from "./Producer.js"
import * as Schedule from "./Schedule.js"

export interface Target {
  readonly cluster: ProcessCluster.Cluster
  readonly admin: ClusterClient.Client
}

export interface Options {
  readonly targets: Readonly<Record<Schedule.ClusterName, Target>>
  readonly topics: ReadonlyArray<string>
  readonly partitions: number
  readonly durationMs: number
  /** Faults due later than this past the phase's end (restarts ran late) are skipped. */
  readonly overrunMs: number
  readonly log: (line: string) => void
}

export interface Outcome {
  /** The faults that ran. */
  readonly executed: ReadonlyArray<Schedule.Fault>
  readonly skipped: ReadonlyArray<Schedule.Fault>
  /** Faults that could not be applied or reverted, in words (a node that would not restart, …). */
  readonly errors: ReadonlyArray<string>
  /** Wall time of the phase, until the last fault was reverted. */
  readonly elapsedMs: number
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, Math.max(0, ms)))
const RESTART_ATTEMPTS = 3

const offset = (ms: number): string => `+${(ms / 1000).toFixed(1)}s`

/** Starts a node again, a few times if it fails to come up. */
const restart = async (cluster: ProcessCluster.Cluster, node: number): Promise<void> => {
  for (let attempt = 1; ; attempt++) {
    try {
      await cluster.start(node)
      return
    } catch (e) {
      if (attempt >= RESTART_ATTEMPTS) throw e
      if (cluster.isAlive(node)) await cluster.kill(node, "SIGKILL").catch(() => undefined)
      await sleep(1_000)
    }
  }
}

/** Preferred leader election of every campaign partition; the per-partition outcomes, counted. */
const electPreferred = async (o: Options, admin: ClusterClient.Client): Promise<string> => {
  const res = await admin.sendToAnyBroker(ElectLeaders.api, {
    electionType: 0,
    topicPartitions: o.topics.map((topic) => ({
      topic,
      partitions: Array.from({ length: o.partitions }, (_, p) => p)
    })),
    timeoutMs: 30_000
  })
  if (res.errorCode !== 0) return `refused: ${Errors.byCode.get(res.errorCode)?.name ?? res.errorCode}`
  const counts = new Map<string, number>()
  for (const t of res.replicaElectionResults)
    for (const p of t.partitionResult) {
      const name = p.errorCode === 0 ? "elected" : (Errors.byCode.get(p.errorCode)?.name ?? `error ${p.errorCode}`)
      counts.set(name, (counts.get(name) ?? 0) + 1)
    }
  return [...counts].map(([k, n]) => `${n} ${k}`).join(", ")
}

/** The active controller a live controller of a quorum names (DescribeCluster), or -1. */
const leaderNamedBy = async (port: number): Promise<number> => {
  const c = await Connection.open({ host: "127.0.0.1", port, clientId: "clustermirror-chaos", requestTimeoutMs: 2_000 })
  try {
    const r = await c.request(DescribeCluster.api, 1, { includeClusterAuthorizedOperations: false, endpointType: 2 })
    return r.controllerId
  } finally {
    c.close()
  }
}

/**
 * The process a fault hits: a broker, the lone controller, or, in a quorum, the active controller or a
 * live standby as the quorum says when the fault starts (waiting out an election, up to 30 s).
 */
export const resolveNode = async (cluster: ProcessCluster.Cluster, node: number): Promise<number> => {
  if (!Schedule.isController(node) || cluster.controllers.length === 1)
    return Schedule.isController(node) ? cluster.controller.nodeId : node
  const ids = cluster.controllers.map((c) => c.nodeId)
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; await sleep(100)) {
    const live = cluster.controllers.filter((c) => cluster.isAlive(c.nodeId))
    const named = await Promise.all(live.map((c) => leaderNamedBy(c.port).catch(() => -1)))
    const leader = named.find((id) => ids.includes(id))
    if (leader === undefined) continue
    if (node === Schedule.CONTROLLER) return leader
    const standby = live.find((c) => c.nodeId !== leader)
    if (standby !== undefined) return standby.nodeId
  }
  throw new Error(`no leader of the controller quorum within 30 s`)
}

export const run = async (schedule: ReadonlyArray<Schedule.Fault>, o: Options): Promise<Outcome> => {
  const began = Date.now()
  const now = () => Date.now() - began
  const executed: Schedule.Fault[] = []
  const skipped: Schedule.Fault[] = []
  const errors: string[] = []

  const apply = async (scheduled: Schedule.Fault, t: Target): Promise<void> => {
    const node = scheduled.kind === "elect" ? -1 : await resolveNode(t.cluster, scheduled.node)
    const f = { ...scheduled, node }
    const quorum = Schedule.isController(scheduled.node) && t.cluster.controllers.length > 1
    const name = quorum
      ? `${Schedule.nodeName(f.cluster, scheduled.node)} (node ${node})`
      : Schedule.nodeName(f.cluster, scheduled.node)
    if (quorum) o.log(`${offset(now())}   ${Schedule.nodeName(f.cluster, scheduled.node)} is ${node}`)
    const startedAt = Date.now()
    switch (f.kind) {
      case "elect": {
        const result = await electPreferred(o, t.admin).catch((e: unknown) => `failed: ${reasonOf(e)}`)
        o.log(`${offset(now())}   ${f.cluster}: preferred election: ${result}`)
        return
      }
      case "sigstop": {
        t.cluster.signal(f.node, "SIGSTOP")
        try {
          await sleep(f.downMs)
        } finally {
          t.cluster.signal(f.node, "SIGCONT")
        }
        o.log(`${offset(now())}   ${name}: SIGCONT after ${((Date.now() - startedAt) / 1000).toFixed(1)}s`)
        return
      }
      case "sigkill":
      case "sigterm": {
        const exit = await t.cluster.kill(f.node, f.kind === "sigkill" ? "SIGKILL" : "SIGTERM")
        await sleep(f.downMs - (Date.now() - startedAt))
        const restartAt = Date.now()
        await restart(t.cluster, f.node)
        o.log(
          `${offset(now())}   ${name}: back (exited with ${exit.signal ?? exit.code}, down ${((restartAt - startedAt) / 1000).toFixed(1)}s, restart took ${((Date.now() - restartAt) / 1000).toFixed(1)}s)`
        )
        return
      }
    }
  }

  const runCluster = async (name: Schedule.ClusterName): Promise<void> => {
    const t = o.targets[name]
    for (const f of schedule.filter((x) => x.cluster === name)) {
      await sleep(f.at - now())
      if (now() > o.durationMs + o.overrunMs) {
        skipped.push(f)
        o.log(`${offset(now())} skipped (too late): ${Schedule.describe(f)}`)
        continue
      }
      o.log(`${offset(now())} ${Schedule.what(f)}${now() - f.at > 1_000 ? ` (due at ${offset(f.at)})` : ""}`)
      executed.push(f)
      try {
        await apply(f, t)
      } catch (e) {
        const message = `${Schedule.describe(f)}: ${e instanceof Error ? e.message.split("\n")[0] : String(e)}`
        errors.push(message)
        o.log(`${offset(now())}   FAULT ERROR ${message}`)
        // The node must be up again before this cluster's next fault, or two could be down at once.
        if (f.kind !== "elect")
          for (const n of Schedule.isController(f.node) ? t.cluster.controllers.map((c) => c.nodeId) : [f.node])
            errors.push(...(await reviveNode(t.cluster, name, n, o.log)))
      }
    }
  }

  await Promise.all(Schedule.CLUSTERS.map(runCluster))
  // The phase lasts its duration even when the last fault came early (or there was none).
  await sleep(o.durationMs - now())
  errors.push(...(await revertAll(o.targets, o.log)))
  return { executed, skipped, errors, elapsedMs: now() }
}

/** Leaves a node running and resumed; what could not be done, in words. */
const reviveNode = async (
  cluster: ProcessCluster.Cluster,
  name: Schedule.ClusterName,
  node: number,
  log: (line: string) => void
): Promise<ReadonlyArray<string>> => {
  try {
    if (cluster.isAlive(node)) cluster.signal(node, "SIGCONT")
    else {
      log(`revert: starting ${Schedule.nodeName(name, node)}`)
      await restart(cluster, node)
    }
    return []
  } catch (e) {
    return [`${Schedule.nodeName(name, node)} not running: ${String(e).split("\n")[0]}`]
  }
}

/** Leaves every node of both clusters running and resumed; what could not be done, in words. */
export const revertAll = async (
  targets: Readonly<Record<Schedule.ClusterName, Target>>,
  log: (line: string) => void
): Promise<ReadonlyArray<string>> => {
  const errors: string[] = []
  for (const name of Schedule.CLUSTERS) {
    const { cluster } = targets[name]
    for (const n of cluster.nodes) errors.push(...(await reviveNode(cluster, name, n.nodeId, log)))
  }
  return errors
}
