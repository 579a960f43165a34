/**
 * Combined mode with a quorum: three nodes of `process.roles=broker,controller`, each one a broker and a
 * voter of the controller quorum in one process (here, in this test's process, on real TCP). Topics are
 * created through the brokers; the node whose controller is active is closed: another becomes active,
 * the brokers left follow it, and topics are still created; the node comes back and catches up.
 */
import { Connection } from "@clustermirror/client"
import * as BrokerConfig from "@clustermirror/broker-config/BrokerConfig"
import { CreateTopics, Errors, Metadata } from "@clustermirror/protocol"
import { Ports, Wait } from "@clustermirror/testkit"
import { afterAll, describe, expect, it } from "vitest"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Node from "../src/Node.js"

const CLUSTER_ID = "c0mbinedQu0rumCluster0"
const root = fs.mkdtempSync(path.join(os.tmpdir(), "cm-combined-"))
const nodes = new Map<number, Node.Node>()
let brokerPorts: Array<number> = []
let controllerPorts: Array<number> = []
const lines: Array<string> = []

const configOf = (id: number): BrokerConfig.BrokerConfig =>
  BrokerConfig.fromProperties(
    new Map([
      ["process.roles", "broker,controller"],
      ["node.id", String(id)],
      ["cluster.id", CLUSTER_ID],
      ["listeners", `PLAINTEXT://127.0.0.1:${brokerPorts[id - 1]},CONTROLLER://127.0.0.1:${controllerPorts[id - 1]}`],
      ["controller.listener.names", "CONTROLLER"],
      ["controller.quorum.voters", controllerPorts.map((p, i) => `${i + 1}@127.0.0.1:${p}`).join(",")],
      ["log.dirs", path.join(root, `node-${id}`)],
      ["default.replication.factor", "3"],
      ["offsets.topic.replication.factor", "3"],
      ["broker.heartbeat.interval.ms", "200"],
      ["controller.quorum.election.timeout.ms", "500"],
      ["controller.quorum.fetch.timeout.ms", "1500"]
    ])
  )

const start = async (id: number) => {
  nodes.set(id, await Node.start(configOf(id), (l) => lines.push(`[${id}] ${l}`)))
}

const withBroker = async <A>(port: number, f: (c: Connection.Connection) => Promise<A>): Promise<A> => {
  const c = await Connection.open({ host: "127.0.0.1", port, clientId: "combined-test" })
  try {
    return await f(c)
  } finally {
    c.close()
  }
}

/** Creates a topic through broker `port`; its error code. */
const create = (port: number, name: string) =>
  withBroker(port, (c) =>
    c.request(CreateTopics.api, 7, {
      topics: [{ name, numPartitions: 1, replicationFactor: 3, assignments: [], configs: [] }],
      timeoutMs: 10_000,
      validateOnly: false
    })
  ).then((r) => r.topics[0]?.errorCode ?? -1)

const topicsAt = (port: number) =>
  withBroker(port, (c) => c.request(Metadata.api, 12, { topics: null, allowAutoTopicCreation: false })).then((r) =>
    r.topics.map((t) => t.name ?? "").sort()
  )

/** The node whose controller is active, from the log lines (the last one to say so, and not since deposed). */
const activeNode = () =>
  Wait.eventually("an active controller", () => {
    const said = lines.filter((l) => l.includes("is the active controller in epoch"))
    const last = said[said.length - 1]
    const m = last === undefined ? null : /^\[(\d+)\]/.exec(last)
    return m === null ? undefined : Number(m[1])
  })

afterAll(async () => {
  for (const n of nodes.values()) await n.close()
  fs.rmSync(root, { recursive: true, force: true })
})

describe("three combined nodes (broker and controller each) in a quorum", () => {
  it("creates topics, survives the close of the active controller's node, and the node catches up", async () => {
    const ports = await Ports.freePorts(6)
    brokerPorts = ports.slice(0, 3)
    controllerPorts = ports.slice(3)
    await Promise.all([1, 2, 3].map(start))
    await Wait.eventually(
      "topic a created",
      async () => ((await create(brokerPorts[0]!, "a")) === 0 ? true : undefined),
      60_000,
      200
    )

    const active = await activeNode()
    await nodes.get(active)!.close()
    nodes.delete(active)
    const other = [1, 2, 3].find((id) => id !== active)!
    // Through a broker of a node still running: sent again while the quorum elects.
    await Wait.eventually(
      "topic b created after the active controller's node closed",
      async () => {
        const code = await create(brokerPorts[other - 1]!, "b")
        return code === 0 || code === Errors.ErrorCode.TOPIC_ALREADY_EXISTS ? true : undefined
      },
      60_000,
      200
    )
    expect(await activeNode()).not.toBe(active)
    expect(await topicsAt(brokerPorts[other - 1]!)).toEqual(["a", "b"])

    await start(active)
    await Wait.eventually(
      "the restarted node's broker has both topics",
      async () => ((await topicsAt(brokerPorts[active - 1]!)).join() === "a,b" ? true : undefined),
      60_000,
      200
    )
  }, 180_000)
})
