/**
 * The fault campaign end to end: a source and a destination cluster of separate server processes (the
 * source one controller and three brokers, the destination a KRaft quorum of three controllers and three
 * brokers), a mirror on the destination of the campaign's topics (RF=3, min.insync.replicas=2), a steady
 * acks=all producer on the source, topics created on the destination throughout, the seeded fault
 * schedule against both clusters, then the checks and a summary. The verdict is PASS only when every check passes.
 *
 * It owns every process and file it starts under its base directory; the data dirs and server logs are
 * kept when the verdict is FAIL (or on request) and their place is printed.
 */
import { mkdirSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { ClusterClient, MirrorAdmin } from "@clustermirror/client"
import { CreateTopics } from "@clustermirror/protocol"
import { ProcessCluster, Wait } from "@clustermirror/testkit"
import * as Faults from "./Faults.js"
import * as MetadataLoad from "./MetadataLoad.js"
import * as Producer from "./Producer.js"
import * as Schedule from "./Schedule.js"
import * as Verify from "./Verify.js"

export interface Options {
  readonly seed: number
  readonly minutes: number
  readonly keepData: boolean
  /** Where the clusters' files go (default: a new temp dir). */
  readonly baseDir?: string
}

export const TOPICS: ReadonlyArray<string> = ["chaos-a", "chaos-b"]
export const PARTITIONS = 6
export const REPLICATION_FACTOR = 3
export const BROKERS = 3
export const MIRROR = "chaos"
/** Long enough that a quick restart (kill, up to a quarter of this, then several seconds of start-up) stays inside it. */
export const SESSION_TIMEOUT_MS = 12_000
/** Records per second over all partitions. */
export const PRODUCE_RATE = 40

/** Recovery bounds: generous, so a busy machine does not fail a correct system. */
const SETUP_BOUND_MS = 120_000
/**
 * How long after the faults the cluster may take to recover (full ISRs, identical replicas, the mirror
 * caught up): one deadline shared by those checks, each still given at least `MIN_CHECK_MS`, so a
 * failing campaign ends in bounded time too.
 */
const RECOVERY_BOUND_MS = 180_000
const MIN_CHECK_MS = 20_000
/** The failover and the produce after it: actions with their own bound. */
const ACTION_BOUND_MS = 90_000
/** A fault due this long after the phase should have ended (restarts ran slow) is skipped, not started. */
const OVERRUN_MS = 15_000

/** How often the destination gets a new topic during the fault phase. */
const METADATA_INTERVAL_MS = 2_000
/** The destination's controllers: a KRaft quorum, whose active controller and standbys take faults. */
const DESTINATION_CONTROLLERS = 3
// The destination creates the mirror topics with its controller's default.replication.factor.
const CONTROLLER_CONFIG = {
  "broker.session.timeout.ms": SESSION_TIMEOUT_MS,
  "default.replication.factor": REPLICATION_FACTOR
}
const BROKER_CONFIG = {
  "broker.heartbeat.interval.ms": 1_000,
  "replica.lag.time.max.ms": 10_000,
  "min.insync.replicas": 2,
  "default.replication.factor": REPLICATION_FACTOR,
  "offsets.topic.replication.factor": 3,
  "auto.create.topics.enable": false,
  "mirror.metadata.refresh.interval.ms": 15_000,
  "mirror.failed.retry.initial.backoff.ms": 500,
  "mirror.failed.retry.max.backoff.ms": 5_000
}
const NODE_ARGS = ["--max-old-space-size=384"]

const log = (line: string): void => {
  process.stdout.write(`${line}\n`)
}

const newClient = (bootstrap: string, clientId: string): ClusterClient.Client =>
  new ClusterClient.Client({
    bootstrapServers: bootstrap.split(","),
    clientId,
    requestTimeoutMs: 15_000,
    connectTimeoutMs: 5_000,
    retry: { attempts: 5, baseMs: 200, maxMs: 2_000, jitter: 0.2 },
    metadataMaxAgeMs: 5_000
  })

const waitForBrokers = (name: string, client: ClusterClient.Client): Promise<true> =>
  Wait.eventually(
    `${name}: ${BROKERS} brokers registered`,
    async () => ((await client.metadata([])).brokers.size === BROKERS ? true : undefined),
    120_000,
    500
  )

const createTopics = async (client: ClusterClient.Client): Promise<void> => {
  const res = await client.sendToAnyBroker(CreateTopics.api, {
    topics: TOPICS.map((name) => ({
      name,
      numPartitions: PARTITIONS,
      replicationFactor: REPLICATION_FACTOR,
      assignments: [],
      configs: [{ name: "min.insync.replicas", value: "2" }]
    })),
    timeoutMs: 30_000,
    validateOnly: false
  })
  const failed = res.topics.filter((t) => t.errorCode !== 0)
  if (failed.length > 0)
    throw new Error(`CreateTopics failed: ${failed.map((t) => `${t.name} error ${t.errorCode}`).join(", ")}`)
}

const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)}s`

export interface Summary {
  readonly pass: boolean
  readonly baseDir: string
}

export const run = async (o: Options): Promise<Summary> => {
  const durationMs = Math.round(o.minutes * 60_000)
  const baseDir = o.baseDir ?? join(tmpdir(), `clustermirror-chaos-${o.seed}-${Date.now()}`)
  mkdirSync(baseDir, { recursive: true })
  const scheduleOptions: Schedule.Options = {
    seed: o.seed,
    durationMs,
    brokers: BROKERS,
    sessionTimeoutMs: SESSION_TIMEOUT_MS,
    quorums: ["destination"]
  }
  const schedule = Schedule.generate(scheduleOptions)
  const broken = Schedule.violations(schedule, scheduleOptions)
  if (broken.length > 0) throw new Error(`the schedule breaks its invariants:\n${broken.join("\n")}`)
  writeFileSync(join(baseDir, "schedule.txt"), `${schedule.map(Schedule.describe).join("\n")}\n`)
  log(`schedule: ${schedule.length} faults over ${seconds(durationMs)} (${join(baseDir, "schedule.txt")})`)
  log(`data and server logs: ${baseDir}`)

  const clusters: ProcessCluster.Cluster[] = []
  const clients: ClusterClient.Client[] = []
  let producer: Producer.Producer | undefined
  let pass = false
  const setupBegan = Date.now()
  try {
    log(
      "setup: starting the source (1 controller + 3 brokers) and the destination (a quorum of 3 controllers + 3 brokers)"
    )
    const startedClusters = await Promise.allSettled(
      (["source", "destination"] as const).map((name) =>
        ProcessCluster.start({
          name,
          baseDir: join(baseDir, name),
          brokers: BROKERS,
          controllers: name === "destination" ? DESTINATION_CONTROLLERS : 1,
          controllerConfig: CONTROLLER_CONFIG,
          brokerConfig: BROKER_CONFIG,
          nodeArgs: NODE_ARGS
        })
      )
    )
    for (const r of startedClusters) if (r.status === "fulfilled") clusters.push(r.value)
    for (const r of startedClusters) if (r.status === "rejected") throw r.reason
    const [source, destination] = clusters
    if (source === undefined || destination === undefined) throw new Error("clusters did not start")
    const sourceAdmin = newClient(source.bootstrap, "clustermirror-chaos-admin")
    const destinationAdmin = newClient(destination.bootstrap, "clustermirror-chaos-admin")
    clients.push(sourceAdmin, destinationAdmin)
    await Promise.all([waitForBrokers("source", sourceAdmin), waitForBrokers("destination", destinationAdmin)])
    await createTopics(sourceAdmin)
    const isr0 = await Verify.isrFull(source, sourceAdmin, TOPICS, PARTITIONS, REPLICATION_FACTOR, SETUP_BOUND_MS)
    if (!isr0.pass) throw new Error(`source topics not fully replicated: ${isr0.details.join("; ")}`)
    const mirrors = new MirrorAdmin.MirrorAdmin(destinationAdmin)
    await mirrors.createClusterMirror(MIRROR, new Map([["bootstrap.servers", source.bootstrap]]))
    const started = await mirrors.startMirrorTopics(MIRROR, TOPICS)
    const refused = started.filter((r) => r.error !== null)
    if (refused.length > 0)
      throw new Error(`StartMirrorTopics: ${refused.map((r) => `${r.name}: ${Producer.explain(r.error)}`).join(", ")}`)
    const mirroring0 = await Verify.mirrorState(mirrors, MIRROR, TOPICS, PARTITIONS, "MIRRORING", SETUP_BOUND_MS)
    if (!mirroring0.pass) throw new Error(`mirror not MIRRORING: ${mirroring0.details.join("; ")}`)
    log(
      `setup: done in ${seconds(Date.now() - setupBegan)}; ${TOPICS.length} topics x ${PARTITIONS} partitions mirrored`
    )

    producer = Producer.start({
      bootstrap: source.bootstrap,
      topics: TOPICS,
      partitions: PARTITIONS,
      rate: PRODUCE_RATE,
      valuePrefix: `s${o.seed}`,
      ackFile: join(baseDir, "acked.txt")
    })
    const metadataLoad = MetadataLoad.start(destinationAdmin, `chaos-meta-${o.seed}`, METADATA_INTERVAL_MS)
    log(
      `faults: ${seconds(durationMs)}, producing ${PRODUCE_RATE} records/s (acks=all), a destination topic created every ${seconds(METADATA_INTERVAL_MS)}`
    )
    const outcome = await Faults.run(schedule, {
      targets: {
        source: { cluster: source, admin: sourceAdmin },
        destination: { cluster: destination, admin: destinationAdmin }
      },
      topics: TOPICS,
      partitions: PARTITIONS,
      durationMs,
      overrunMs: OVERRUN_MS,
      log
    })
    await producer.stop()
    await metadataLoad.stop()
    const stats = producer.stats()
    const faultsEnded = Date.now()
    const recoveryBound = (): number => Math.max(MIN_CHECK_MS, faultsEnded + RECOVERY_BOUND_MS - Date.now())
    log(
      `faults: ended after ${seconds(outcome.elapsedMs)}; producer sent ${stats.sent}, acked ${stats.acked}, failed ${stats.failed}${stats.failures.size === 0 ? "" : ` (${[...stats.failures].map(([k, n]) => `${k} ${n}`).join(", ")})`}`
    )

    log("verification:")
    const results: Verify.CheckResult[] = []
    const report = (r: Verify.CheckResult): void => {
      results.push(r)
      log(`  ${r.pass ? "PASS" : "FAIL"} ${r.name} (after ${seconds(r.waitedMs)})`)
      for (const d of r.details) log(`       ${d}`)
    }
    const faultErrors: Verify.CheckResult = {
      name: "every fault applied and reverted",
      pass: outcome.errors.length === 0,
      details: [`${outcome.executed.length} faults ran, ${outcome.skipped.length} skipped`, ...outcome.errors],
      waitedMs: 0
    }
    report(faultErrors)
    const isrSource = await Verify.isrFull(source, sourceAdmin, TOPICS, PARTITIONS, REPLICATION_FACTOR, recoveryBound())
    report(isrSource)
    const isrDestination = await Verify.isrFull(
      destination,
      destinationAdmin,
      TOPICS,
      PARTITIONS,
      REPLICATION_FACTOR,
      recoveryBound()
    )
    report(isrDestination)
    const timeToIsr = Date.now() - faultsEnded
    const loss = await Verify.ackedRecords(source.bootstrap, TOPICS, PARTITIONS, producer.acked(), recoveryBound())
    report(loss)
    report(await Verify.replicasIdentical(source, TOPICS, PARTITIONS, recoveryBound()))
    const mirror = await Verify.mirrorIdentical(source.bootstrap, destination.bootstrap, TOPICS, recoveryBound())
    report(mirror)
    report(await Verify.replicasIdentical(destination, TOPICS, PARTITIONS, recoveryBound()))
    report(await Verify.mirrorState(mirrors, MIRROR, TOPICS, PARTITIONS, "MIRRORING", recoveryBound()))
    const created = metadataLoad.acknowledged()
    report(await Verify.topicsExist(destinationAdmin, "destination", created, metadataLoad.retries(), recoveryBound()))
    report(await Verify.failover(mirrors, MIRROR, TOPICS, PARTITIONS, ACTION_BOUND_MS))
    report(await Verify.produceToDestination(destinationAdmin, TOPICS, PARTITIONS, ACTION_BOUND_MS))

    pass = results.every((r) => r.pass)
    const failedChecks = results.filter((r) => !r.pass).map((r) => r.name)
    log("summary:")
    log(`  seed ${o.seed}, ${o.minutes} minute(s) of faults`)
    const kinds = Schedule.counts(outcome.executed)
    if (kinds.length === 0) log("  faults: none")
    for (const [kind, n] of kinds) log(`  ${kind}: ${n}`)
    log(`  records acked ${stats.acked}, lost ${loss.lost}`)
    log(`  destination topics created ${created.length} (${metadataLoad.retries()} attempts sent again)`)
    log(
      `  time to full ISR after the faults: ${isrSource.pass && isrDestination.pass ? seconds(timeToIsr) : `not full within ${seconds(RECOVERY_BOUND_MS)}`}`
    )
    log(`  mirror lag at the end: ${mirror.lag} records`)
    log(`  verdict: ${pass ? "PASS" : `FAIL (${failedChecks.join("; ")})`}`)
    log(`  replay: pnpm chaos --seed ${o.seed} --minutes ${o.minutes}`)
  } catch (e) {
    log(`campaign aborted: ${e instanceof Error ? e.message : String(e)}`)
    log("verdict: FAIL")
    pass = false
  } finally {
    if (producer !== undefined) await producer.stop().catch(() => undefined)
    for (const c of clients) await c.close().catch(() => undefined)
    for (const c of clusters) await c.stop().catch(() => undefined)
  }
  if (pass && !o.keepData) rmSync(baseDir, { recursive: true, force: true })
  else log(`data dirs, server logs (<cluster>/<node>/server.log), acked records and schedule kept in ${baseDir}`)
  return { pass, baseDir }
}
