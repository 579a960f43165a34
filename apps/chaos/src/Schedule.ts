/**
 * The fault schedule of a campaign, drawn from a seeded generator: per cluster, a sequence of faults
 * (SIGKILL or SIGTERM then a restart, quickly inside the broker session timeout or after a longer outage
 * beyond it; SIGSTOP then SIGCONT; a preferred leader election) against random brokers and the
 * controller, with quiet gaps between them. In a cluster whose controllers are a quorum, a controller
 * fault hits the active controller or a standby, which the campaign finds when the fault starts. The
 * same options always give the same schedule.
 *
 * Invariants (checked by `violations`): within a cluster no two outages overlap, so at most one node of
 * a cluster is down or paused at any time (with RF=3 and min.insync.replicas=2 an acknowledged write
 * must survive); every outage ends (is reverted) within the campaign's duration. The two clusters'
 * sequences are independent, so faults on the source and the destination overlap.
 *
 * Pure: it only computes; running the faults is the campaign's business.
 */
import * as Prng from "./Prng.js"

export type ClusterName = "source" | "destination"

export const CLUSTERS: ReadonlyArray<ClusterName> = ["source", "destination"]

/** The controller's node id in a schedule (brokers are 1..N); in a quorum, the active controller. */
export const CONTROLLER = 1000
/** In a cluster whose controllers are a quorum: one of the standby controllers (found when the fault starts). */
export const STANDBY_CONTROLLER = -2

export type FaultKind = "sigkill" | "sigterm" | "sigstop" | "elect"

/** How long a node stays down or paused relative to the broker session timeout. */
export type Outage = "quick" | "long"

export interface Fault {
  /** Milliseconds from the start of the fault phase. */
  readonly at: number
  readonly cluster: ClusterName
  readonly kind: FaultKind
  /** The node hit (a broker id, `CONTROLLER` or `STANDBY_CONTROLLER`); -1 for an election, which asks the whole cluster. */
  readonly node: number
  /** How long the node is down or paused before the fault is reverted; 0 for an election. */
  readonly downMs: number
  /** Quick (inside the session timeout) or long (beyond it); null for an election. */
  readonly outage: Outage | null
}

export interface Options {
  readonly seed: number
  /** Length of the fault phase: every fault starts and is reverted within it. */
  readonly durationMs: number
  /** Brokers per cluster (ids 1..N). */
  readonly brokers: number
  /** The controller's `broker.session.timeout.ms`: what "quick" and "long" outages are measured against. */
  readonly sessionTimeoutMs: number
  /** The clusters whose controllers are a quorum (their controller faults hit the active one or a standby). */
  readonly quorums?: ReadonlyArray<ClusterName>
}

/** Relative weights of the fault kinds. */
const WEIGHTS: ReadonlyArray<readonly [FaultKind, number]> = [
  ["sigkill", 3],
  ["sigterm", 2],
  ["sigstop", 2],
  ["elect", 2]
]

/** Share of node faults that hit the controller rather than a broker. */
const CONTROLLER_SHARE = 0.2
const FIRST_FAULT_MS: readonly [number, number] = [1_000, 6_000]
const GAP_MS: readonly [number, number] = [3_000, 10_000]

const pickKind = (rng: Prng.Prng): FaultKind => {
  const total = WEIGHTS.reduce((n, [, w]) => n + w, 0)
  let x = rng.next() * total
  for (const [kind, w] of WEIGHTS) {
    if (x < w) return kind
    x -= w
  }
  return WEIGHTS[WEIGHTS.length - 1]![0]
}

/** Down time of a node fault: quick ones end well inside the session timeout, long ones well beyond it. */
const downTime = (rng: Prng.Prng, kind: FaultKind, outage: Outage, sessionTimeoutMs: number): number => {
  // A restart adds the server's start-up time (seconds on a busy machine) to the down time.
  const quickMax = Math.max(600, Math.floor(sessionTimeoutMs / 4))
  if (outage === "quick") return kind === "sigstop" ? rng.int(1_000, Math.max(1_000, quickMax)) : rng.int(200, quickMax)
  return kind === "sigstop"
    ? rng.int(sessionTimeoutMs + 1_000, sessionTimeoutMs + 5_000)
    : rng.int(sessionTimeoutMs + 2_000, sessionTimeoutMs + 10_000)
}

const clusterFaults = (rng: Prng.Prng, cluster: ClusterName, o: Options): Fault[] => {
  const out: Fault[] = []
  let t = rng.int(...FIRST_FAULT_MS)
  while (t < o.durationMs) {
    const kind = pickKind(rng)
    if (kind === "elect") {
      out.push({ at: t, cluster, kind, node: -1, downMs: 0, outage: null })
    } else {
      const controller = rng.chance(CONTROLLER_SHARE)
      const quorum = o.quorums?.includes(cluster) === true
      const node = !controller ? rng.int(1, o.brokers) : quorum && rng.chance(0.5) ? STANDBY_CONTROLLER : CONTROLLER
      const outage: Outage = rng.chance(0.5) ? "quick" : "long"
      const downMs = downTime(rng, kind, outage, o.sessionTimeoutMs)
      // A fault that could not be reverted in time is not started: the schedule ends before the phase does.
      if (t + downMs <= o.durationMs) out.push({ at: t, cluster, kind, node, downMs, outage })
      t += downMs
    }
    t += rng.int(...GAP_MS)
  }
  return out
}

/** Whether `node` is one of a controller fault's targets. */
export const isController = (node: number): boolean => node === CONTROLLER || node === STANDBY_CONTROLLER

/** The campaign's faults in time order (clusters interleaved; the source first at equal times). */
export const generate = (o: Options): ReadonlyArray<Fault> => {
  const rng = Prng.make(o.seed)
  const all = CLUSTERS.flatMap((c) => clusterFaults(rng, c, o))
  return all.sort((a, b) => a.at - b.at || CLUSTERS.indexOf(a.cluster) - CLUSTERS.indexOf(b.cluster))
}

/** A node's name in a cluster, e.g. "source broker 2", "destination controller", "destination standby controller". */
export const nodeName = (cluster: ClusterName, node: number): string =>
  node === CONTROLLER
    ? `${cluster} controller`
    : node === STANDBY_CONTROLLER
      ? `${cluster} standby controller`
      : node > CONTROLLER
        ? `${cluster} controller ${node}`
        : `${cluster} broker ${node}`

/** The fault kind as reported, e.g. "SIGKILL+restart (quick)". */
export const label = (f: Pick<Fault, "kind" | "outage">): string => {
  switch (f.kind) {
    case "sigkill":
      return `SIGKILL+restart (${f.outage})`
    case "sigterm":
      return `SIGTERM+restart (${f.outage})`
    case "sigstop":
      return `SIGSTOP/SIGCONT (${f.outage})`
    case "elect":
      return "preferred election"
  }
}

const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)}s`

/** What a fault does, e.g. "source broker 2: SIGKILL+restart (long), down 14.0s". */
export const what = (f: Fault): string =>
  f.kind === "elect"
    ? `${f.cluster}: preferred election`
    : `${nodeName(f.cluster, f.node)}: ${label(f)}, ${f.kind === "sigstop" ? "paused" : "down"} ${seconds(f.downMs)}`

/** One line per fault with its time offset, e.g. "+12.3s source broker 2: SIGKILL+restart (long), down 14.0s". */
export const describe = (f: Fault): string => `+${seconds(f.at)} ${what(f)}`

/** How many faults of each kind (by `label`), in a stable order. */
export const counts = (
  faults: ReadonlyArray<Pick<Fault, "kind" | "outage">>
): ReadonlyArray<readonly [string, number]> => {
  const m = new Map<string, number>()
  for (const f of faults) m.set(label(f), (m.get(label(f)) ?? 0) + 1)
  return [...m].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
}

/** What breaks the schedule's invariants, in words; empty for a valid schedule. */
export const violations = (faults: ReadonlyArray<Fault>, o: Options): ReadonlyArray<string> => {
  const out: string[] = []
  for (const f of faults) {
    const what = describe(f)
    if (f.at < 0 || f.at + f.downMs > o.durationMs) out.push(`${what}: not within 0..${o.durationMs} ms`)
    if (f.kind === "elect" ? f.downMs !== 0 || f.node !== -1 : f.downMs <= 0)
      out.push(`${what}: a node fault needs a down time, an election none`)
    if (
      f.kind !== "elect" &&
      !(f.node === CONTROLLER || (f.node === STANDBY_CONTROLLER && o.quorums?.includes(f.cluster) === true)) &&
      (f.node < 1 || f.node > o.brokers)
    )
      out.push(`${what}: no such node`)
  }
  for (const c of CLUSTERS) {
    const outages = faults.filter((f) => f.cluster === c && f.kind !== "elect").sort((a, b) => a.at - b.at)
    for (let i = 1; i < outages.length; i++) {
      const prev = outages[i - 1]!
      if (outages[i]!.at < prev.at + prev.downMs)
        out.push(`${describe(outages[i]!)} starts while ${nodeName(c, prev.node)} is still down`)
    }
  }
  return out
}
