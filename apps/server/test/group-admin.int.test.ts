/**
 * DeleteGroups (key 42) and OffsetDelete (key 47) with Kafka's own `kafka-consumer-groups`, on our 3-broker
 * cluster and on Apache Kafka 4.4 side by side, the outputs and exit codes compared:
 *
 * - `ga-active` has offsets of two topics and a live kafkajs member subscribed to one of them:
 *   `--delete-offsets` of the other topic succeeds, of a partition it does not have fails
 *   (UNKNOWN_TOPIC_OR_PARTITION), of the subscribed one fails (GROUP_SUBSCRIBED_TO_TOPIC),
 *   `--delete` is refused (NON_EMPTY_GROUP), as it is for an unknown group (GROUP_ID_NOT_FOUND).
 * - `ga-inactive`, whose consumer left, is deleted; `--describe` and `--list` no longer show it.
 * - After a restart of our cluster the deletions hold: the same `--describe` and `--list` as before.
 */
import { ApacheKafka, JavaTools, KafkaPeer, ServerProcess, Wait } from "@clustermirror/testkit"
import { Kafka, logLevel } from "kafkajs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

const SUBSCRIBED = "ga-sub"
const OTHER = "ga-other"
const PARTITIONS = 2
const RECORDS = 10

interface Cluster {
  readonly name: string
  readonly bootstrap: string
}

interface Outcome {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Output lines with runs of spaces collapsed (column widths follow the longest value). */
const normalized = (text: string): string[] =>
  text
    .split("\n")
    .map((l) => l.trim().replace(/\s+/g, " "))
    .filter((l) => l !== "")

/** The error lines of a tool's stderr (not the JVM's or the client's log lines). */
const errors = (stderr: string): string[] =>
  normalized(stderr).filter((l) => /^(Error|\*|Request failed|org\.apache\.kafka)/.test(l))

/** `--describe` rows as `group topic partition current-offset log-end-offset lag` (member columns differ by cluster). */
const describedOffsets = (stdout: string): string[] =>
  normalized(stdout)
    .map((l) => l.split(" "))
    .filter((cols) => cols.length >= 6 && /^\d+$/.test(cols[2]!))
    .map((cols) => cols.slice(0, 6).join(" "))
    .sort()

describe("kafka-consumer-groups --delete and --delete-offsets, compared with Apache Kafka 4.4", () => {
  let kafka: ApacheKafka.KafkaNode
  let ours: ServerProcess.ServerHandle
  let clusters: ReadonlyArray<Cluster> = []
  const stops: Array<() => Promise<void>> = []

  const onBoth = <A>(f: (c: Cluster) => Promise<A>): Promise<A[]> => Promise.all(clusters.map(f))

  const tool = async (c: Cluster, args: ReadonlyArray<string>): Promise<Outcome> => {
    const r = await JavaTools.consumerGroups(["--bootstrap-server", c.bootstrap, ...args])
    return { code: r.code, stdout: r.stdout, stderr: r.stderr }
  }

  /** Runs the tool on both clusters: the same exit code, stdout and error lines; Kafka's outcome. */
  const same = async (args: ReadonlyArray<string>): Promise<Outcome> => {
    const [k, o] = await onBoth((c) => tool(c, args))
    expect({ code: o!.code, stdout: normalized(o!.stdout), errors: errors(o!.stderr) }).toEqual({
      code: k!.code,
      stdout: normalized(k!.stdout),
      errors: errors(k!.stderr)
    })
    return k!
  }

  const kafkajs = (c: Cluster, clientId: string) =>
    new Kafka({ clientId, brokers: c.bootstrap.split(","), logLevel: logLevel.NOTHING, retry: { retries: 20 } })

  /** A kafkajs member of `groupId` subscribed to `topic`, running until stopped, once it joined the group. */
  const member = async (c: Cluster, groupId: string, topic: string) => {
    const consumer = kafkajs(c, `${groupId}-member`).consumer({ groupId, sessionTimeout: 10_000 })
    let joined = false
    consumer.on(consumer.events.GROUP_JOIN, () => {
      joined = true
    })
    await consumer.connect()
    await consumer.subscribe({ topic, fromBeginning: true })
    await consumer.run({ autoCommit: false, eachMessage: async () => {} })
    await Wait.eventually(`${groupId} joined on ${c.name}`, () => (joined ? true : undefined))
    const stop = () => consumer.disconnect()
    stops.push(stop)
    return stop
  }

  beforeAll(async () => {
    await KafkaPeer.libs()
    const started = await Promise.allSettled([
      ApacheKafka.startKafka({
        jvmFlags: ApacheKafka.FAST_START_JVM_FLAGS,
        properties: { ...ApacheKafka.QUICK_SESSION_PROPERTIES, "num.partitions": PARTITIONS }
      }).then((k) => (kafka = k)),
      ServerProcess.start({
        tempPrefix: "cm-group-admin-",
        args: ["--embedded", "3"],
        readyLines: 4,
        config: {
          ...ServerProcess.TEST_DEFAULTS,
          "num.partitions": PARTITIONS,
          "default.replication.factor": 3,
          "offsets.topic.replication.factor": 3,
          "broker.heartbeat.interval.ms": 300
        }
      }).then((s) => (ours = s))
    ])
    for (const r of started) if (r.status === "rejected") throw r.reason
    clusters = [
      { name: "kafka", bootstrap: kafka.bootstrap },
      { name: "ours", bootstrap: [0, 1, 2].map((i) => `127.0.0.1:${ours.port + i}`).join(",") }
    ]
    await onBoth(async (c) => {
      const client = kafkajs(c, "ga-setup")
      const admin = client.admin()
      await admin.connect()
      await admin.createTopics({
        waitForLeaders: true,
        topics: [SUBSCRIBED, OTHER].map((topic) => ({ topic, numPartitions: PARTITIONS }))
      })
      const producer = client.producer()
      await producer.connect()
      for (const topic of [SUBSCRIBED, OTHER])
        for (let partition = 0; partition < PARTITIONS; partition++)
          await producer.send({
            topic,
            acks: -1,
            messages: Array.from({ length: RECORDS }, (_, i) => ({ partition, value: `${topic}-${partition}-${i}` }))
          })
      await producer.disconnect()
      // Offsets of both topics for both groups, from outside group management (as `--reset-offsets` does).
      for (const groupId of ["ga-active", "ga-inactive"])
        for (const [topic, offset] of [
          [SUBSCRIBED, "7"],
          [OTHER, "4"]
        ] as const)
          await admin.setOffsets({
            groupId,
            topic,
            partitions: Array.from({ length: PARTITIONS }, (_, partition) => ({ partition, offset }))
          })
      await admin.disconnect()
    })
    // ga-inactive had a member of its own once; it left.
    await onBoth(async (c) => (await member(c, "ga-inactive", SUBSCRIBED))())
    await onBoth((c) => member(c, "ga-active", SUBSCRIBED))
  }, 240_000)

  afterAll(async () => {
    await Promise.allSettled(stops.map((s) => s()))
    await ours?.stop()
    await kafka?.stop()
  })

  it("--delete-offsets deletes a topic the active group does not subscribe to and refuses the one it does", async () => {
    const other = await same(["--delete-offsets", "--group", "ga-active", "--topic", OTHER])
    expect(other.code).toBe(0)
    expect(normalized(other.stdout)).toEqual([
      "Request succeeded for deleting offsets from group ga-active.",
      "TOPIC PARTITION STATUS",
      `${OTHER} 0 Successful`,
      `${OTHER} 1 Successful`
    ])
    // a partition the topic does not have: UNKNOWN_TOPIC_OR_PARTITION from the broker, not the coordinator
    const unknown = await same(["--delete-offsets", "--group", "ga-active", "--topic", `${OTHER}:5`])
    expect(`${unknown.stdout}\n${unknown.stderr}`).toMatch(/UnknownTopicOrPartitionException/)
    const subscribed = await same(["--delete-offsets", "--group", "ga-active", "--topic", `${SUBSCRIBED}:0`])
    expect(`${subscribed.stdout}\n${subscribed.stderr}`).toMatch(
      /GroupSubscribedToTopicException: Deleting offsets of a topic is forbidden/
    )
  })

  it("--delete refuses an active group and an unknown one, and deletes an inactive one", async () => {
    const refused = await same(["--delete", "--group", "ga-active", "--group", "ga-missing"])
    expect(`${refused.stdout}\n${refused.stderr}`).toMatch(/GroupNotEmptyException/)
    expect(`${refused.stdout}\n${refused.stderr}`).toMatch(/GroupIdNotFoundException/)
    const deleted = await same(["--delete", "--group", "ga-inactive"])
    expect(deleted.code).toBe(0)
    expect(normalized(deleted.stdout)).toEqual([
      "Deletion of requested consumer groups ('ga-inactive') was successful."
    ])
  })

  it("--describe shows what is left, and a restart of our cluster keeps the deletions", async () => {
    const describe = (c: Cluster, group: string) => tool(c, ["--describe", "--group", group])
    const [kActive, oActive] = await onBoth((c) => describe(c, "ga-active"))
    expect(describedOffsets(oActive!.stdout)).toEqual(describedOffsets(kActive!.stdout))
    // the subscribed topic's offsets stay; the other topic's are gone
    expect(describedOffsets(kActive!.stdout).map((r) => r.split(" ").slice(0, 4).join(" "))).toEqual([
      `ga-active ${SUBSCRIBED} 0 7`,
      `ga-active ${SUBSCRIBED} 1 7`
    ])
    const inactive = await same(["--describe", "--group", "ga-inactive"])
    expect(`${inactive.stdout}\n${inactive.stderr}`).toMatch(/GroupIdNotFoundException: Group ga-inactive not found/)
    const listed = (stdout: string) => normalized(stdout).filter((l) => l.startsWith("ga-"))
    const [kList] = await onBoth(async (c) => listed((await tool(c, ["--list"])).stdout))
    expect(kList).toEqual(["ga-active"])

    await ours.restart()
    const oursCluster = clusters[1]!
    await Wait.eventually("our cluster answers after the restart", async () =>
      (await tool(oursCluster, ["--describe", "--group", "ga-active"])).code === 0 ? true : undefined
    )
    const after = await describe(oursCluster, "ga-active")
    expect(describedOffsets(after.stdout)).toEqual(describedOffsets(oActive!.stdout))
    const gone = await describe(oursCluster, "ga-inactive")
    expect({ code: gone.code, stdout: normalized(gone.stdout), errors: errors(gone.stderr) }).toEqual({
      code: inactive.code,
      stdout: normalized(inactive.stdout),
      errors: errors(inactive.stderr)
    })
    expect(listed((await tool(oursCluster, ["--list"])).stdout)).toEqual(["ga-active"])
  })
})
