/**
 * confluent-kafka 2.16 (Python, bundling librdkafka 2.16) against the server process: `list_topics()`
 * (librdkafka's all-topics Metadata v12, which carries bytes after its body), a produce, and a consumer
 * group subscribed with the regular expression `^topic-.*` that must find the topics through that
 * all-topics request and consume every record. Checks what the client observes only.
 */
import { ConfluentKafka } from "@clustermirror/testkit"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ServerHandle, startServer } from "./harness.js"

const TOPICS = ["topic-a", "topic-b"] as const
const OTHER = "other-topic"
const PER_TOPIC = 20

interface Observed {
  readonly versions: readonly [string, string]
  readonly topics: ReadonlyArray<string>
  readonly delivered: number
  readonly deliveryErrors: ReadonlyArray<string>
  readonly consumed: ReadonlyArray<{ readonly topic: string; readonly value: string }>
}

const script = `
import json, sys, time
import confluent_kafka
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient

bootstrap, topics, other, per_topic = sys.argv[1], sys.argv[2].split(","), sys.argv[3], int(sys.argv[4])
base = {"bootstrap.servers": bootstrap}

listed = sorted(AdminClient(base).list_topics(timeout=60).topics.keys())

delivered, errors = [0], []
def on_delivery(err, msg):
    if err is None:
        delivered[0] += 1
    else:
        errors.append(str(err))
producer = Producer({**base, "linger.ms": 5, "acks": "all"})
for t in topics + [other]:
    for i in range(per_topic):
        producer.produce(t, value=f"{t}-{i}".encode(), on_delivery=on_delivery)
producer.flush(120)

consumer = Consumer({**base, "group.id": "regex-group", "auto.offset.reset": "earliest",
                     "topic.metadata.refresh.interval.ms": 1000})
consumer.subscribe(["^topic-.*"])
consumed = []
deadline = time.time() + 120
while len(consumed) < per_topic * len(topics) and time.time() < deadline:
    msg = consumer.poll(1.0)
    if msg is None or msg.error() is not None:
        continue
    consumed.append({"topic": msg.topic(), "value": msg.value().decode()})
consumer.close()

print(json.dumps({"versions": [confluent_kafka.__version__, confluent_kafka.libversion()[0]], "topics": listed,
                  "delivered": delivered[0], "deliveryErrors": errors, "consumed": consumed}))
`

describe("confluent-kafka 2.16 against the server", () => {
  let server: ServerHandle

  beforeAll(async () => {
    server = await startServer()
    const admin = server.kafka().admin()
    await admin.connect()
    try {
      await admin.createTopics({ topics: [...TOPICS, OTHER].map((topic) => ({ topic, numPartitions: 2 })) })
    } finally {
      await admin.disconnect()
    }
  })

  afterAll(async () => {
    await server?.stop()
  })

  it("lists topics, produces, and consumes through a regex subscription", async () => {
    const { result } = await ConfluentKafka.run<Observed>(script, [
      server.bootstrap,
      TOPICS.join(","),
      OTHER,
      String(PER_TOPIC)
    ])
    expect(result.versions[0]).toBe(ConfluentKafka.VERSION)
    expect(result.versions[1]).toMatch(/^2\.16\./)
    expect(result.topics).toEqual(expect.arrayContaining([...TOPICS, OTHER]))
    expect(result.deliveryErrors).toEqual([])
    expect(result.delivered).toBe(PER_TOPIC * (TOPICS.length + 1))
    const expected = TOPICS.flatMap((t) => Array.from({ length: PER_TOPIC }, (_, i) => `${t}-${i}`)).sort()
    expect(result.consumed.map((r) => r.value).sort()).toEqual(expected)
    expect(result.consumed.every((r) => r.topic !== OTHER)).toBe(true)
    expect(server.output()).not.toContain("malformed request")
  })
})
