/**
 * The campaign's checks after the faults stopped, each an outcome with figures: acknowledged records
 * not lost (kcat reads every source partition from the beginning), replicas byte-identical within a
 * cluster (the log files on disk), every ISR full again (each broker's own Metadata view), the mirror
 * byte-identical to its source (`MirrorCheck`), every mirror partition MIRRORING, a failover that stops
 * every partition, and an acks=all produce to the destination.
 *
 * Checks wait for their condition within generous bounds and judge the outcome, never how long it
 * took: the time is reported, not judged. Only the failover and the final produce write anything.
 */
import type { ClusterClient, MirrorAdmin } from "@clustermirror/client"
import { Errors, Metadata, Produce, RecordBatch } from "@clustermirror/protocol"
import { Kcat, MirrorCheck, type ProcessCluster } from "@clustermirror/testkit"
import * as LossCheck from "./LossCheck.js"
import { explain, reasonOf } from "./Producer.js"
import * as ReplicaCheck from "./ReplicaCheck.js"

export interface CheckResult {
  readonly name: string
  readonly pass: boolean
  /** Figures and, on failure, the evidence (one item per line). */
  readonly details: ReadonlyArray<string>
  /** How long the check waited for its condition. */
  readonly waitedMs: number
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/**
 * Polls `attempt` until it passes or `boundMs` ran out; the last attempt's details are the result.
 * An attempt that throws counts as failed, with the error as its detail.
 */
export const until = async (
  name: string,
  boundMs: number,
  intervalMs: number,
  attempt: () => Promise<{ readonly pass: boolean; readonly details: ReadonlyArray<string> }>
): Promise<CheckResult> => {
  const began = Date.now()
  for (;;) {
    let r: { readonly pass: boolean; readonly details: ReadonlyArray<string> }
    try {
      r = await attempt()
    } catch (e) {
      r = { pass: false, details: [`error: ${e instanceof Error ? e.message.split("\n")[0] : String(e)}`] }
    }
    if (r.pass || Date.now() - began > boundMs)
      return { name, pass: r.pass, details: r.details, waitedMs: Date.now() - began }
    await sleep(intervalMs)
  }
}

/** The first `n` lines, and how many more there were. */
const limit = (items: ReadonlyArray<string>, n = 12): ReadonlyArray<string> =>
  items.length <= n ? items : [...items.slice(0, n), `... and ${items.length - n} more`]

// ---------------------------------------------------------------------------------------------------
// (1) acknowledged records

/** Reads every partition of `topics` from the beginning with kcat, to its high watermark. */
export const readAll = async (
  bootstrap: string,
  topics: ReadonlyArray<string>,
  partitions: number
): Promise<Map<string, LossCheck.PartitionContents>> => {
  const out = new Map<string, LossCheck.PartitionContents>()
  for (const topic of topics)
    for (let p = 0; p < partitions; p++) {
      const r = await Kcat.kcat(
        ["-b", bootstrap, "-C", "-t", topic, "-p", String(p), "-o", "beginning", "-e", "-q", "-f", "%o %s\\n"],
        { timeoutMs: 120_000 }
      )
      out.set(LossCheck.partitionKey(topic, p), LossCheck.parseOffsetsAndValues(r.stdout))
    }
  return out
}

export const ackedRecords = (
  bootstrap: string,
  topics: ReadonlyArray<string>,
  partitions: number,
  acked: ReadonlyArray<LossCheck.Acked>,
  boundMs: number
): Promise<CheckResult & { readonly lost: number }> => {
  let lost = acked.length
  return until("acked records not lost", boundMs, 5_000, async () => {
    const contents = await readAll(bootstrap, topics, partitions)
    const r = LossCheck.check(acked, contents)
    lost = r.lost.length + r.changed.length
    const held = [...contents.values()].reduce((n, c) => n + c.size, 0)
    return {
      pass: lost === 0,
      details: [
        `${r.checked} acked, ${r.lost.length} lost, ${r.changed.length} changed; ${held} records read back`,
        ...LossCheck.summary(r)
      ]
    }
  }).then((c) => ({ ...c, lost }))
}

// ---------------------------------------------------------------------------------------------------
// (2) replicas within a cluster

export const replicasIdentical = (
  cluster: ProcessCluster.Cluster,
  topics: ReadonlyArray<string>,
  partitions: number,
  boundMs: number
): Promise<CheckResult> =>
  until(`${cluster.name} replicas byte-identical`, boundMs, 3_000, async () => {
    const results: ReplicaCheck.PartitionResult[] = []
    for (const topic of topics)
      for (let p = 0; p < partitions; p++)
        results.push(
          ReplicaCheck.compareReplicas(
            topic,
            p,
            cluster.brokers.map((b) => ({ broker: b.nodeId, log: ReplicaCheck.readPartitionLog(b.logDir, topic, p) }))
          )
        )
    const bad = results.filter((r) => r.mismatch !== null)
    const batches = results.reduce((n, r) => n + r.batches, 0)
    return {
      pass: bad.length === 0,
      details: [
        `${results.length - bad.length}/${results.length} partitions identical on every replica (${batches} batches)`,
        ...limit(
          bad.map(
            (r) =>
              `${r.topic}-${r.partition}: ${r.mismatch}; ends ${r.ends.map(([b, e]) => `broker ${b}=${e}`).join(" ")}`
          )
        )
      ]
    }
  })

// ---------------------------------------------------------------------------------------------------
// (3) ISR full

interface PartitionView {
  readonly topic: string
  readonly partition: number
  readonly leader: number
  readonly replicas: ReadonlyArray<number>
  readonly isr: ReadonlyArray<number>
}

const brokerView = async (admin: ClusterClient.Client, nodeId: number): Promise<ReadonlyArray<PartitionView>> => {
  const res = await admin.sendToNode(nodeId, Metadata.api, { topics: null, allowAutoTopicCreation: false })
  return res.topics.flatMap((t) =>
    t.partitions.map((p) => ({
      topic: t.name ?? "",
      partition: p.partitionIndex,
      leader: p.leaderId,
      replicas: p.replicaNodes,
      isr: p.isrNodes
    }))
  )
}

export const isrFull = (
  cluster: ProcessCluster.Cluster,
  admin: ClusterClient.Client,
  topics: ReadonlyArray<string>,
  partitions: number,
  replicationFactor: number,
  boundMs: number
): Promise<CheckResult> =>
  until(
    `${cluster.name} every ISR full (RF ${replicationFactor} for the campaign topics)`,
    boundMs,
    2_000,
    async () => {
      const details: string[] = []
      /** Each partition that is not full, as seen, with the brokers that see it so. */
      const notFull = new Map<string, number[]>()
      let total = 0
      let full = 0
      for (const b of cluster.brokers) {
        let view: ReadonlyArray<PartitionView>
        try {
          view = await brokerView(admin, b.nodeId)
        } catch (e) {
          details.push(`broker ${b.nodeId}: Metadata failed: ${reasonOf(e)}`)
          continue
        }
        const missing = topics.flatMap((t) =>
          Array.from({ length: partitions }, (_, p) => p)
            .filter((p) => !view.some((v) => v.topic === t && v.partition === p))
            .map((p) => `${t}-${p}`)
        )
        if (missing.length > 0) details.push(`broker ${b.nodeId}: does not know ${limit(missing, 6).join(", ")}`)
        for (const v of view) {
          total++
          const rfOk = !topics.includes(v.topic) || v.replicas.length === replicationFactor
          if (v.leader >= 0 && rfOk && v.isr.length === v.replicas.length) full++
          else {
            const seen = `${v.topic}-${v.partition}: leader ${v.leader}, replicas [${v.replicas}], isr [${v.isr}]`
            notFull.set(seen, [...(notFull.get(seen) ?? []), b.nodeId])
          }
        }
      }
      // The campaign's topics first: internal topics (__mirror_state) follow.
      for (const [seen, by] of [...notFull].sort(([a], [b]) => Number(a.startsWith("__")) - Number(b.startsWith("__"))))
        details.push(`${seen} (seen by broker${by.length > 1 ? "s" : ""} ${by.join(",")})`)
      return {
        pass: full === total && total > 0 && details.length === 0,
        details: [`${full}/${total} partition views full (every broker's own Metadata)`, ...limit(details, 16)]
      }
    }
  )

// ---------------------------------------------------------------------------------------------------
// (4) mirror identical, (5) MIRRORING

export const mirrorIdentical = (
  source: string,
  destination: string,
  topics: ReadonlyArray<string>,
  boundMs: number
): Promise<CheckResult & { readonly lag: number }> => {
  let lag = -1
  return until("mirror byte-identical to its source", boundMs, 3_000, async () => {
    const c = await MirrorCheck.compareClusters({ source, destination, topics, upTo: "sourceHighWatermark" })
    lag = c.partitions.reduce((n, p) => n + Math.max(0, p.sourceEnd - Math.max(0, p.destinationEnd)), 0)
    const bad = c.partitions.filter((p) => p.firstMismatch !== null)
    const records = c.partitions.reduce((n, p) => n + p.records, 0)
    return {
      pass: c.identical,
      details: [
        `${c.partitions.length - bad.length}/${c.partitions.length} partitions identical (${records} records, ${c.bytes} bytes); lag ${lag} records`,
        ...limit(
          bad.map((p) => {
            const m = p.firstMismatch!
            return `${p.topic}-${p.partition}: ${m.what} at ${m.offset} (source ${m.source}, destination ${m.destination}); source end ${p.sourceEnd}, destination end ${p.destinationEnd}`
          })
        )
      ]
    }
  }).then((r) => ({ ...r, lag }))
}

const stateCounts = (ps: ReadonlyArray<MirrorAdmin.PartitionDescription>): string => {
  const m = new Map<string, number>()
  for (const p of ps) m.set(p.state, (m.get(p.state) ?? 0) + 1)
  return [...m].map(([s, n]) => `${n} ${s}`).join(", ")
}

const mirrorPartitions = async (
  admin: MirrorAdmin.MirrorAdmin,
  mirror: string,
  topics: ReadonlyArray<string>
): Promise<ReadonlyArray<MirrorAdmin.PartitionDescription>> =>
  ((await admin.describeClusterMirrors([mirror])).mirrors[0]?.partitions ?? []).filter((p) => topics.includes(p.topic))

/** Every partition of `topics` in `state`, by DescribeClusterMirrors. */
export const mirrorState = (
  admin: MirrorAdmin.MirrorAdmin,
  mirror: string,
  topics: ReadonlyArray<string>,
  partitions: number,
  state: "MIRRORING" | "STOPPED",
  boundMs: number
): Promise<CheckResult> =>
  until(`every mirror partition ${state}`, boundMs, 2_000, async () => {
    const ps = await mirrorPartitions(admin, mirror, topics)
    const expected = topics.length * partitions
    const off = ps.filter((p) => p.state !== state)
    return {
      pass: ps.length === expected && off.length === 0,
      details: [
        `${ps.length - off.length}/${expected} partitions ${state} (${stateCounts(ps) || "none described"})`,
        ...limit(
          off.map(
            (p) => `${p.topic}-${p.partition}: ${p.state}${p.errorMessage === null ? "" : ` (${p.errorMessage})`}`
          )
        )
      ]
    }
  })

// ---------------------------------------------------------------------------------------------------
// (6) failover, (7) produce to the destination

/**
 * StopMirrorTopics of every campaign topic, asked again while it is refused (an operator would retry a
 * refusal such as a state that changed meanwhile) within the bound; every refusal is reported. Then
 * every partition must reach STOPPED.
 */
export const failover = async (
  admin: MirrorAdmin.MirrorAdmin,
  mirror: string,
  topics: ReadonlyArray<string>,
  partitions: number,
  boundMs: number
): Promise<CheckResult> => {
  const name = "failover (stop) to STOPPED"
  const began = Date.now()
  const refusals: string[] = []
  const stop = await until(name, boundMs, 5_000, async () => {
    let refused: ReadonlyArray<string>
    try {
      const results = await admin.stopMirrorTopics(mirror, topics)
      refused = results.filter((r) => r.error !== null).map((r) => `${r.name}: ${explain(r.error)}`)
    } catch (e) {
      refused = [`StopMirrorTopics failed: ${explain(e)}`]
    }
    const at = `after ${((Date.now() - began) / 1000).toFixed(1)}s`
    refusals.push(...refused.map((r) => `${at}: ${r}`))
    return { pass: refused.length === 0, details: [] }
  })
  const tried = `StopMirrorTopics refused ${refusals.length} time(s)`
  if (!stop.pass) return { name, pass: false, details: [tried, ...limit(refusals)], waitedMs: Date.now() - began }
  const stopped = await mirrorState(
    admin,
    mirror,
    topics,
    partitions,
    "STOPPED",
    Math.max(10_000, boundMs - (Date.now() - began))
  )
  return {
    ...stopped,
    name,
    details: [...stopped.details, ...(refusals.length === 0 ? [] : [tried, ...limit(refusals)])],
    waitedMs: Date.now() - began
  }
}

export const produceToDestination = (
  destination: ClusterClient.Client,
  topics: ReadonlyArray<string>,
  partitions: number,
  boundMs: number
): Promise<CheckResult> => {
  const done = new Set<string>()
  const errors = new Map<string, string>()
  const attempt = async (topic: string, p: number): Promise<void> => {
    const key = `${topic}-${p}`
    if (done.has(key)) return
    const records = RecordBatch.build({
      records: [{ key: null, value: Buffer.from(`after-failover-${key}`) }],
      timestamp: Date.now()
    })
    try {
      await destination.sendToLeader(
        topic,
        p,
        Produce.api,
        () => ({
          transactionalId: null,
          acks: -1,
          timeoutMs: 15_000,
          topicData: [{ name: topic, partitionData: [{ index: p, records }] }]
        }),
        (r) => r.responses[0]?.partitionResponses[0]?.errorCode ?? Errors.ErrorCode.UNKNOWN_SERVER_ERROR
      )
      done.add(key)
      errors.delete(key)
    } catch (e) {
      errors.set(key, explain(e))
    }
  }
  return until("acks=all produce to the destination", boundMs, 2_000, async () => {
    await Promise.all(topics.flatMap((topic) => Array.from({ length: partitions }, (_, p) => attempt(topic, p))))
    return {
      pass: errors.size === 0 && done.size === topics.length * partitions,
      details: [
        `${done.size}/${topics.length * partitions} partitions took an acks=all record`,
        ...limit([...errors].map(([k, e]) => `${k}: ${e}`))
      ]
    }
  })
}

// ---------------------------------------------------------------------------------------------------
// acknowledged metadata changes

/** Every topic whose creation the cluster acknowledged during the faults is in its metadata. */
export const topicsExist = (
  admin: ClusterClient.Client,
  cluster: string,
  topics: ReadonlyArray<string>,
  retries: number,
  boundMs: number
): Promise<CheckResult> =>
  until(`${cluster} every acknowledged topic creation kept`, boundMs, 2_000, async () => {
    const meta = await admin.metadata(topics)
    const missing = topics.filter((t) => !meta.topics.has(t))
    return {
      pass: topics.length > 0 && missing.length === 0,
      details: [
        `${topics.length} topics acknowledged during the faults (${retries} attempts sent again), ${missing.length} missing`,
        ...limit(missing)
      ]
    }
  })
