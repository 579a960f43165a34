/**
 * `kafka-topics --describe` (Kafka 4.4) against our broker, which advertises DescribeTopicPartitions
 * (key 75), so the tool's admin client pages through it instead of Metadata. The broker advertises a
 * proxy in front of it, so every request of the tool goes through the proxy, which decodes each key-75
 * request and response. A topic of 5 partitions:
 *
 * 1. `--partition-size-limit-per-response 2`: three pages of 2, 2 and 1 partitions, each request carrying
 *    the cursor the previous answer ended with; the tool lists every partition with its leader, replicas
 *    and ISR, and the empty ELR lists of key 75 (the Metadata path prints `Elr: N/A`).
 * 2. Without the option (the tool asks for 2000): the broker's `max.request.partition.size.limit=3` caps
 *    each page, two pages of 3 and 2.
 */
import { Api, DescribeTopicPartitions } from "@clustermirror/protocol"
import { JavaTools, KafkaPeer, Ports, ServerProcess } from "@clustermirror/testkit"
import { Either } from "effect"
import * as net from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

const TOPIC = "paged"
const PARTITIONS = 5

interface Page {
  readonly request: DescribeTopicPartitions.Request
  readonly response: DescribeTopicPartitions.Response
}

/** Size-prefixed frames (without the prefix) of a byte stream. */
const framer = (onFrame: (frame: Buffer) => void) => {
  let pending = Buffer.alloc(0)
  return (chunk: Buffer) => {
    pending = Buffer.concat([pending, chunk])
    while (pending.length >= 4 && pending.length >= 4 + pending.readInt32BE(0)) {
      const size = pending.readInt32BE(0)
      onFrame(pending.subarray(4, 4 + size))
      pending = pending.subarray(4 + size)
    }
  }
}

/** Forwards to `targetPort`, decoding every DescribeTopicPartitions exchange into `pages`. */
const describeProxy = async (listenPort: number, targetPort: number) => {
  const pages: Array<Page> = []
  const sockets = new Set<net.Socket>()
  const server = net.createServer((client) => {
    const upstream = net.connect(targetPort, "127.0.0.1")
    const asked = new Map<number, DescribeTopicPartitions.Request>()
    for (const s of [client, upstream]) sockets.add(s)
    client.on(
      "data",
      framer((frame) => {
        if (frame.readInt16BE(0) === DescribeTopicPartitions.api.key) {
          const decoded = Either.getOrThrow(Api.decodeRequest(DescribeTopicPartitions.api, frame))
          asked.set(decoded.header.correlationId, decoded.body)
        }
        const size = Buffer.alloc(4)
        size.writeInt32BE(frame.length)
        upstream.write(Buffer.concat([size, frame]))
      })
    )
    upstream.on(
      "data",
      framer((frame) => {
        const request = asked.get(frame.readInt32BE(0))
        if (request !== undefined) {
          const answer = Either.getOrThrow(Api.decodeResponse(DescribeTopicPartitions.api, 0, frame))
          pages.push({ request, response: answer.body })
        }
        const size = Buffer.alloc(4)
        size.writeInt32BE(frame.length)
        client.write(Buffer.concat([size, frame]))
      })
    )
    const end = () => {
      for (const s of [client, upstream]) {
        s.destroy()
        sockets.delete(s)
      }
    }
    for (const s of [client, upstream]) {
      s.on("error", end)
      s.on("close", end)
    }
  })
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject)
    server.listen(listenPort, "127.0.0.1", () => resolve())
  })
  return {
    pages,
    close: async () => {
      for (const s of sockets) s.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    }
  }
}

/** Each page: the cursor it was asked from, its limit, and the partitions it answered. */
const summary = (pages: ReadonlyArray<Page>) =>
  pages.map((p) => ({
    cursor: p.request.cursor,
    limit: p.request.responsePartitionLimit,
    partitions: p.response.topics.flatMap((t) => t.partitions.map((q) => `${t.name}-${q.partitionIndex}`)),
    next: p.response.nextCursor
  }))

describe("kafka-topics --describe through DescribeTopicPartitions", () => {
  let server: ServerProcess.ServerHandle | undefined
  let proxy: Awaited<ReturnType<typeof describeProxy>> | undefined
  let bootstrap: string

  beforeAll(async () => {
    await KafkaPeer.libs()
    const [port, proxyPort] = await Ports.freePorts(2)
    proxy = await describeProxy(proxyPort!, port!)
    bootstrap = `127.0.0.1:${proxyPort}`
    // The inter-broker listener registers the port it bound, so the clients get a listener of their own.
    server = await ServerProcess.start({
      port: false,
      config: {
        ...ServerProcess.TEST_DEFAULTS,
        listeners: `INTERNAL://127.0.0.1:0,CLIENT://127.0.0.1:${port}`,
        "advertised.listeners": `CLIENT://${bootstrap}`,
        "listener.security.protocol.map": "INTERNAL:PLAINTEXT,CLIENT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "INTERNAL",
        "max.request.partition.size.limit": 3
      }
    })
    JavaTools.expectSuccess(
      "kafka-topics --create",
      await JavaTools.kafkaTopics([
        "--bootstrap-server",
        bootstrap,
        "--create",
        "--topic",
        TOPIC,
        "--partitions",
        String(PARTITIONS)
      ])
    )
  }, 120_000)

  afterAll(async () => {
    await server?.stop()
    await proxy?.close()
  })

  const describeTopic = async (extra: ReadonlyArray<string>) => {
    proxy!.pages.length = 0
    const r = JavaTools.expectSuccess(
      "kafka-topics --describe",
      await JavaTools.kafkaTopics(["--bootstrap-server", bootstrap, "--describe", "--topic", TOPIC, ...extra])
    )
    return JavaTools.lines(r.stdout)
  }

  it("pages of --partition-size-limit-per-response 2, resumed at each cursor, list every partition", async () => {
    const out = await describeTopic(["--partition-size-limit-per-response", "2"])
    expect(out[0]).toMatch(new RegExp(`^Topic: ${TOPIC}\\tTopicId: \\S+\\tPartitionCount: ${PARTITIONS}\\t`))
    const rows = out.slice(1).map((l) => l.trimStart())
    expect(rows).toHaveLength(PARTITIONS)
    rows.forEach((row, i) => {
      const m = new RegExp(
        `^Topic: ${TOPIC}\\tPartition: ${i}\\tLeader: (\\d+)\\tReplicas: (\\d+)\\tIsr: (\\d+)\\tElr: \\tLastKnownElr: $`
      ).exec(row)
      expect(m, row).not.toBeNull()
      expect(new Set(m!.slice(1)).size, row).toBe(1)
    })
    expect(summary(proxy!.pages)).toEqual([
      { cursor: null, limit: 2, partitions: ["paged-0", "paged-1"], next: { topicName: TOPIC, partitionIndex: 2 } },
      {
        cursor: { topicName: TOPIC, partitionIndex: 2 },
        limit: 2,
        partitions: ["paged-2", "paged-3"],
        next: { topicName: TOPIC, partitionIndex: 4 }
      },
      { cursor: { topicName: TOPIC, partitionIndex: 4 }, limit: 2, partitions: ["paged-4"], next: null }
    ])
  }, 60_000)

  it("the broker's max.request.partition.size.limit caps what the tool asks for", async () => {
    const out = await describeTopic([])
    expect(out.slice(1).map((l) => /Partition: (\d+)/.exec(l)?.[1])).toEqual(["0", "1", "2", "3", "4"])
    expect(summary(proxy!.pages)).toEqual([
      {
        cursor: null,
        limit: 2000,
        partitions: ["paged-0", "paged-1", "paged-2"],
        next: { topicName: TOPIC, partitionIndex: 3 }
      },
      { cursor: { topicName: TOPIC, partitionIndex: 3 }, limit: 2000, partitions: ["paged-3", "paged-4"], next: null }
    ])
  }, 60_000)
})
