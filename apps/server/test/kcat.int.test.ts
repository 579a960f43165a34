/**
 * kcat (librdkafka) against the server process: metadata listing, topic auto-creation, and a 100,000
 * message produce/consume round trip per compression codec. Checks what the client observes only.
 */
import { createHash } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { PEAK_RSS_LIMIT_MB, type ServerHandle, startServer } from "./harness.js"

const MESSAGES = 100_000
const CODECS = ["none", "gzip", "snappy", "lz4", "zstd"] as const

/** `kcat -L -J` output, the parts we check. */
interface KcatMetadata {
  readonly brokers: ReadonlyArray<{ readonly id: number; readonly name: string }>
  readonly topics: ReadonlyArray<{
    readonly topic: string
    readonly error?: string
    readonly partitions: ReadonlyArray<{ readonly partition: number; readonly leader: number }>
  }>
}

const metadata = async (server: ServerHandle, topic?: string): Promise<KcatMetadata> => {
  const { stdout } = await server.kcat(["-L", "-J", ...(topic === undefined ? [] : ["-t", topic])])
  return JSON.parse(stdout) as KcatMetadata
}

const sha256 = (lines: ReadonlyArray<string>): string => {
  const h = createHash("sha256")
  for (const l of lines) h.update(l).update("\n")
  return h.digest("hex")
}

/** Distinct, partly compressible values: the padding varies with `i` so codecs see realistic input. */
const values = (prefix: string, n: number): string[] => {
  const out = new Array<string>(n)
  for (let i = 0; i < n; i++) out[i] = `${prefix}-${i}-${"abcdefghij".repeat(3)}-${(i * 2654435761) % 1000003}`
  return out
}

const consumedLines = (stdout: string): string[] => {
  const lines = stdout.split("\n")
  if (lines[lines.length - 1] === "") lines.pop()
  return lines
}

describe("kcat against the server", () => {
  let server: ServerHandle

  beforeAll(async () => {
    server = await startServer()
  })

  afterAll(async () => {
    await server?.stop()
  })

  it("kcat -L lists the broker with its advertised host:port", async () => {
    const md = await metadata(server)
    expect(md.brokers.length).toBe(1)
    const broker = md.brokers[0]!
    expect(Number.isInteger(broker.id)).toBe(true)
    expect(broker.name).toMatch(new RegExp(`^[^:]+:${server.port}$`))

    const plain = await server.kcat(["-L"])
    expect(plain.stdout).toContain("1 brokers:")
    expect(plain.stdout).toContain(`broker ${broker.id} at ${broker.name}`)
  })

  it("auto-creates a topic on produce and lists it with a leader", async () => {
    const topic = "kcat-auto-created"
    const input = values("auto", 10)
    await server.kcat(["-P", "-t", topic, "-X", "acks=all"], { input: input.join("\n") + "\n" })
    const md = await metadata(server, topic)
    const t = md.topics.find((x) => x.topic === topic)
    expect(t).toBeDefined()
    expect(t!.error).toBeUndefined()
    expect(t!.partitions.length).toBe(1)
    expect(t!.partitions[0]!.leader).toBe(md.brokers[0]!.id)

    const { stdout } = await server.kcat(["-C", "-t", topic, "-e", "-q", "-o", "beginning", "-f", "%s\\n"])
    expect(consumedLines(stdout)).toEqual(input)

    const all = await metadata(server)
    expect(all.topics.map((x) => x.topic)).toContain(topic)
  })

  for (const codec of CODECS) {
    it(`round-trips ${MESSAGES} messages compressed with ${codec}`, async () => {
      const topic = `kcat-${codec}`
      const admin = server.kafka().admin()
      await admin.connect()
      try {
        const created = await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true })
        expect(created).toBe(true)
      } finally {
        await admin.disconnect()
      }

      const sent = values(codec, MESSAGES)
      const started = Date.now()
      await server.kcat(["-P", "-t", topic, "-z", codec, "-X", "linger.ms=5", "-X", "acks=all"], {
        input: sent.join("\n") + "\n"
      })
      const produced = Date.now()
      const { stdout } = await server.kcat(["-C", "-t", topic, "-e", "-q", "-o", "beginning", "-f", "%s\\n"])
      const received = consumedLines(stdout)
      console.log(
        `kcat ${codec}: produced ${MESSAGES} in ${produced - started} ms, consumed ${received.length} in ${Date.now() - produced} ms`
      )

      expect(received.length).toBe(sent.length)
      expect(sha256([...received].sort())).toBe(sha256([...sent].sort()))
    })
  }

  it(`keeps the server's peak RSS under ${PEAK_RSS_LIMIT_MB} MB`, () => {
    const peak = server.peakRssMb()
    console.log(`server peak RSS (kcat suite): ${peak.toFixed(1)} MB`)
    expect(peak).toBeGreaterThan(0)
    expect(peak).toBeLessThan(PEAK_RSS_LIMIT_MB)
  })

  it("exits cleanly on SIGTERM", async () => {
    const exit = await server.kill("SIGTERM")
    expect(exit).toEqual({ code: 0, signal: null })
  })
})
