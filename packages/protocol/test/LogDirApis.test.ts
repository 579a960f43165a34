import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { AlterReplicaLogDirs, DescribeLogDirs } from "../src/index.js"

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex")

const result = {
  errorCode: 0,
  logDir: "/d",
  topics: [{ name: "t", partitions: [{ partitionIndex: 1, partitionSize: 70n, offsetLag: 0n, isFutureKey: false }] }],
  totalBytes: 4096n,
  usableBytes: 1024n,
  isCordoned: false
}

describe("DescribeLogDirs (key 35)", () => {
  it("serves versions 1-5, flexible from v2", () => {
    expect([DescribeLogDirs.api.minVersion, DescribeLogDirs.api.maxVersion]).toEqual([1, 5])
    expect(DescribeLogDirs.Request.isFlexible(1)).toBe(false)
    expect(DescribeLogDirs.Request.isFlexible(2)).toBe(true)
  })

  it("request v1: a null topic list asks for every partition", () => {
    expect(hex(Either.getOrThrow(DescribeLogDirs.Request.encode(1, { topics: null })))).toBe("ffffffff")
    const back = Either.getOrThrow(DescribeLogDirs.Request.decode(2, Buffer.from("0000", "hex")))
    expect(back.topics).toBeNull()
  })

  it("response v4: top-level error, then per dir its topics, TotalBytes and UsableBytes", () => {
    const bytes = Either.getOrThrow(
      DescribeLogDirs.Response.encode(4, { throttleTimeMs: 0, errorCode: 0, results: [result] })
    )
    expect(hex(bytes)).toBe(
      "00000000" + // ThrottleTimeMs
        "0000" + // ErrorCode
        "02" + // one result (compact array)
        "0000" + // ErrorCode
        "032f64" + // LogDir "/d"
        "02" + // one topic
        "0274" + // "t"
        "02" + // one partition
        "00000001" + // PartitionIndex
        "0000000000000046" + // PartitionSize 70
        "0000000000000000" + // OffsetLag
        "00" + // IsFutureKey
        "00" + // partition tags
        "00" + // topic tags
        "0000000000001000" + // TotalBytes 4096
        "0000000000000400" + // UsableBytes 1024
        "00" + // result tags
        "00" // response tags
    )
  })

  it("response v3 leaves out the volume sizes; v1 the top-level error as well", () => {
    const v3 = Either.getOrThrow(DescribeLogDirs.Response.encode(3, { throttleTimeMs: 0, errorCode: 31, results: [] }))
    expect(hex(v3)).toBe("00000000" + "001f" + "01" + "00")
    const v1 = Either.getOrThrow(DescribeLogDirs.Response.encode(1, { throttleTimeMs: 0, results: [] }))
    expect(hex(v1)).toBe("00000000" + "00000000")
    const back = Either.getOrThrow(DescribeLogDirs.Response.decode(3, Buffer.from(v3)))
    expect(back.results).toEqual([])
    expect(back.errorCode).toBe(31)
  })

  it("response v5 carries IsCordoned after UsableBytes", () => {
    const bytes = Either.getOrThrow(
      DescribeLogDirs.Response.encode(5, { throttleTimeMs: 0, errorCode: 0, results: [{ ...result, topics: [] }] })
    )
    expect(hex(bytes)).toBe(
      "00000000" +
        "0000" +
        "02" +
        "0000" +
        "032f64" +
        "01" +
        "0000000000001000" +
        "0000000000000400" +
        "00" +
        "00" +
        "00"
    )
  })
})

describe("AlterReplicaLogDirs (key 34)", () => {
  it("serves versions 1-2; request v1: dirs, topics, partitions as classic arrays", () => {
    expect([AlterReplicaLogDirs.api.minVersion, AlterReplicaLogDirs.api.maxVersion]).toEqual([1, 2])
    const bytes = Either.getOrThrow(
      AlterReplicaLogDirs.Request.encode(1, { dirs: [{ path: "/d", topics: [{ name: "t", partitions: [0, 2] }] }] })
    )
    expect(hex(bytes)).toBe("00000001" + "00022f64" + "00000001" + "000174" + "00000002" + "00000000" + "00000002")
  })

  it("response v2: per topic, per partition its error code", () => {
    const bytes = Either.getOrThrow(
      AlterReplicaLogDirs.Response.encode(2, {
        throttleTimeMs: 0,
        results: [{ topicName: "t", partitions: [{ partitionIndex: 0, errorCode: 57 }] }]
      })
    )
    expect(hex(bytes)).toBe("00000000" + "02" + "0274" + "02" + "00000000" + "0039" + "00" + "00" + "00")
  })
})
