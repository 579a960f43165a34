/**
 * Failover right after a controller restart, with real processes: a one-broker source cluster of
 * ours, a destination of one controller process and one broker process, a mirror of many partitions
 * started with one `--start` of the operator CLI. The controller is restarted (it writes a snapshot
 * as it stops and reloads it), and the operator's `--stop` right after must succeed at once: the
 * optimistic lock compares the broker's metadata offset with the controller's on the same log. The
 * stop answers once its desired state is committed; sent again while the partitions are still stopping
 * (a client retrying after a timeout) it succeeds as well; and the broker, which stops every partition
 * meanwhile, still answers SIGTERM by exiting cleanly.
 *
 * `CM_RESTART_TOPICS` × `CM_RESTART_PARTITIONS` (default 20 × 100) sets the size.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { ClusterClient, MirrorAdmin } from "@clustermirror/client"
import { CreateTopics } from "@clustermirror/protocol"
import { Ports, ServerProcess, Wait } from "@clustermirror/testkit"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Cluster, type ServerHandle, cli, startCluster } from "./harness.js"

const TOPICS = Number(process.env.CM_RESTART_TOPICS ?? 20)
const PARTITIONS = Number(process.env.CM_RESTART_PARTITIONS ?? 100)
const TOTAL = TOPICS * PARTITIONS
const MIRROR = "dr"
const names = Array.from({ length: TOPICS }, (_, i) => `r${String(i).padStart(3, "0")}`)

describe(`failover right after a controller restart (${TOTAL} mirrored partitions)`, () => {
  let source: ServerProcess.ServerHandle
  let cluster: Cluster
  let broker: ServerHandle
  let src: ClusterClient.Client
  let dst: ClusterClient.Client
  let admin: MirrorAdmin.MirrorAdmin

  beforeAll(async () => {
    source = await ServerProcess.start({
      tempPrefix: "cm-restart-src-",
      port: await Ports.freePort(),
      args: ["--embedded", "1"],
      readyLines: 2,
      config: { "num.partitions": 1, "default.replication.factor": 1, "offsets.topic.replication.factor": 1 }
    })
    cluster = await startCluster({
      brokers: 1,
      controllerConfig: {
        "default.replication.factor": 1,
        "mirror.state.topic.num.partitions": 3,
        "mirror.state.topic.replication.factor": 1
      },
      brokerConfig: {
        "broker.heartbeat.interval.ms": 500,
        "offsets.topic.replication.factor": 1,
        "default.replication.factor": 1
      }
    })
    broker = cluster.brokers[0]!
    src = new ClusterClient.Client({ bootstrapServers: [source.bootstrap], requestTimeoutMs: 120_000 })
    dst = new ClusterClient.Client({ bootstrapServers: [broker.bootstrap], requestTimeoutMs: 120_000 })
    admin = new MirrorAdmin.MirrorAdmin(dst)
    await Wait.eventually("the destination broker", async () =>
      (await dst.metadata([])).brokers.size === 1 ? true : undefined
    )
  }, 300_000)

  afterAll(async () => {
    await src?.close()
    await dst?.close()
    await cluster?.stop()
    await source?.stop()
  })

  const partitionStates = async () => {
    const d = await admin.describeClusterMirrors([MIRROR])
    return d.mirrors[0]?.partitions ?? []
  }

  const waitAll = (state: string, timeoutMs: number) =>
    Wait.eventually(
      `all ${TOTAL} partitions ${state}`,
      async () => {
        const parts = await partitionStates()
        return parts.length === TOTAL && parts.every((p) => p.state === state) ? parts : undefined
      },
      timeoutMs,
      1000
    )

  it("an operator's --stop of every mirrored partition succeeds right after the controller restarted", async () => {
    const created = await src.sendToAnyBroker(CreateTopics.api, {
      topics: names.map((name) => ({
        name,
        numPartitions: PARTITIONS,
        replicationFactor: 1,
        assignments: [],
        configs: []
      })),
      timeoutMs: 120_000,
      validateOnly: false
    })
    expect(created.topics.map((t) => t.errorCode)).toEqual(names.map(() => 0))

    const config = path.join(os.tmpdir(), `cm-restart-${process.pid}.properties`)
    fs.writeFileSync(config, `bootstrap.servers=${source.bootstrap}\n`)
    const bootstrap = broker.bootstrap
    const create = await cli([
      "--bootstrap-server",
      bootstrap,
      "--create",
      "--mirror",
      MIRROR,
      "--mirror-config",
      config
    ])
    fs.rmSync(config, { force: true })
    expect(create.code, create.stderr).toBe(0)
    const start = await cli(["--bootstrap-server", bootstrap, "--start", "--mirror", MIRROR, "--topics", "r.*"])
    expect(start.code, `${start.stdout}${start.stderr}`).toBe(0)
    expect(start.stdout).toContain(`Started ${TOPICS} mirror topic(s) in mirror ${MIRROR}`)
    await waitAll("MIRRORING", 600_000)

    const restarted = Date.now()
    await cluster.controller.restart()
    console.log(`controller restarted in ${Date.now() - restarted} ms`)

    const stopping = Date.now()
    const stop = await cli(["--bootstrap-server", bootstrap, "--stop", "--mirror", MIRROR, "--topics", "r.*"])
    console.log(`--stop of ${TOTAL} partitions answered in ${Date.now() - stopping} ms after the restart`)
    expect(stop.code, `${stop.stdout}${stop.stderr}`).toBe(0)
    expect(`${stop.stdout}${stop.stderr}`).not.toContain("INVALID_CLUSTER_MIRROR_STATES")
    // The stop again, named topic by topic as a client retrying after a timeout sends it: the topics are
    // already desired STOPPED, most partitions still on their way there.
    const again = await cli([
      "--bootstrap-server",
      bootstrap,
      "--stop",
      "--mirror",
      MIRROR,
      "--topics",
      names.join(",")
    ])
    expect(again.code, `${again.stdout}${again.stderr}`).toBe(0)
    await waitAll("STOPPED", 600_000)
    console.log(`all ${TOTAL} partitions STOPPED ${Date.now() - stopping} ms after the --stop was sent`)
    const terminated = Date.now()
    expect(await broker.kill("SIGTERM")).toEqual({ code: 0, signal: null })
    console.log(`the broker exited ${Date.now() - terminated} ms after SIGTERM`)
  }, 1_500_000)
})
