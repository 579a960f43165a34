/**
 * MirrorMaker 2 from Maven Central between two real Apache Kafka nodes: records produced to the source
 * appear on the target under the same topic name, every value exactly once.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as ApacheKafka from "../src/ApacheKafka.js"
import * as Kcat from "../src/Kcat.js"
import * as KafkaPeer from "../src/KafkaPeer.js"
import * as MirrorMaker from "../src/MirrorMaker.js"
import * as Wait from "../src/Wait.js"

const TOPIC = "mm2-copied"
const RECORDS = 500

describe("MirrorMaker", () => {
  let source: ApacheKafka.KafkaNode
  let target: ApacheKafka.KafkaNode
  let mm2: MirrorMaker.MirrorMakerProcess | undefined

  beforeAll(async () => {
    await Promise.all([KafkaPeer.libs(), KafkaPeer.connectMirrorLibs()])
    const opts = { jvmFlags: ApacheKafka.FAST_START_JVM_FLAGS, properties: { "num.partitions": 2 } }
    ;[source, target] = await Promise.all([ApacheKafka.startKafka(opts), ApacheKafka.startKafka(opts)])
  }, 300_000)

  afterAll(async () => {
    await mm2?.stop()
    await Promise.all([source?.stop(), target?.stop()])
  })

  it("copies a topic to the same name on the target", async () => {
    const input = `${Array.from({ length: RECORDS }, (_, i) => `record-${i}`).join("\n")}\n`
    await Kcat.forBootstrap(source.bootstrap)(["-P", "-t", TOPIC, "-z", "lz4", "-X", "acks=all"], { input })
    mm2 = await MirrorMaker.start({
      source: source.bootstrap,
      target: target.bootstrap,
      topics: TOPIC,
      heap: "256m",
      jvmFlags: ApacheKafka.FAST_START_JVM_FLAGS
    })
    const copied = await Wait.eventually(
      `${RECORDS} records on the target`,
      async () => {
        const r = await Kcat.forBootstrap(target.bootstrap)(["-C", "-t", TOPIC, "-e", "-q", "-f", "%s\\n"]).catch(
          () => undefined
        )
        const lines = r?.stdout.split("\n").filter((l) => l.length > 0) ?? []
        return lines.length >= RECORDS ? lines : undefined
      },
      180_000,
      1_000
    )
    expect(copied.length).toBe(RECORDS)
    expect([...copied].sort()).toEqual(Array.from({ length: RECORDS }, (_, i) => `record-${i}`).sort())
    expect(mm2.isAlive()).toBe(true)
  })
})
