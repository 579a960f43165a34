/**
 * DeleteTopics in every layout a client may send: v0-5 name their topics in `TopicNames`, v6 in `Topics`
 * (by name or id). A broker forwards the request to the controller in the channel's version, and each
 * layout deletes its topics and answers for each of them by name.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { ClusterClient, Connection } from "@clustermirror/client"
import { CreateTopics, DeleteTopics } from "@clustermirror/protocol"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as BrokerConfig from "@clustermirror/broker-config/BrokerConfig"
import * as Node from "../src/Node.js"

describe("DeleteTopics forwarded from a broker to the controller", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cm-delete-topics-"))
  let cluster: Node.Embedded
  let client: ClusterClient.Client

  beforeAll(async () => {
    cluster = await Node.embedded(1, {
      ...BrokerConfig.defaults,
      port: 0,
      dataDir: dir,
      brokerHeartbeatIntervalMs: 200,
      offsetsTopicReplicationFactor: 1,
      defaultReplicationFactor: 1
    })
    client = new ClusterClient.Client({ bootstrapServers: [cluster.bootstrap], requestTimeoutMs: 10_000 })
  })

  afterAll(async () => {
    await client?.close()
    await cluster?.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  const create = async (names: ReadonlyArray<string>) => {
    const res = await client.sendToAnyBroker(CreateTopics.api, {
      topics: names.map((name) => ({ name, numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] })),
      timeoutMs: 10_000,
      validateOnly: false
    })
    expect(res.topics.map((t) => t.errorCode)).toEqual(names.map(() => 0))
  }
  const existing = async (names: ReadonlyArray<string>) => {
    client.invalidate(names[0]!)
    const snap = await client.metadata(names)
    return names.filter((n) => snap.topics.get(n)?.errorCode === 0)
  }

  it.each([1, 4, 5])("v%i deletes the topics named in TopicNames", async (version) => {
    const names = [`old-${version}-a`, `old-${version}-b`]
    await create(names)
    const [host, port] = cluster.bootstrap.split(":")
    const conn = await Connection.open({ host: host!, port: Number(port), requestTimeoutMs: 10_000 })
    try {
      const res = await conn.request(DeleteTopics.api, version, { topics: [], topicNames: names, timeoutMs: 10_000 })
      expect(res.responses.map((r) => [r.name, r.errorCode])).toEqual(names.map((n) => [n, 0]))
      const missing = await conn.request(DeleteTopics.api, version, {
        topics: [],
        topicNames: [`never-${version}`],
        timeoutMs: 10_000
      })
      expect(missing.responses.map((r) => [r.name, r.errorCode])).toEqual([[`never-${version}`, 3]])
    } finally {
      await conn.close()
    }
    expect(await existing(names)).toEqual([])
  })

  it("v6 deletes the topics named in Topics", async () => {
    await create(["new-a"])
    const res = await client.sendToAnyBroker(DeleteTopics.api, {
      topics: [{ name: "new-a", topicId: "AAAAAAAAAAAAAAAAAAAAAA" }],
      topicNames: [],
      timeoutMs: 10_000
    })
    expect(res.responses.map((r) => [r.name, r.errorCode])).toEqual([["new-a", 0]])
    expect(await existing(["new-a"])).toEqual([])
  })
})
