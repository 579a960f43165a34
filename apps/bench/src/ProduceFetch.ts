/**
 * The `produce-fetch` suite: Produce (acks=1 and acks=-1) and Fetch throughput of one clustermirror
 * server process against a raw loopback baseline given the same bytes, with the server's CPU time and
 * peak RSS.
 *
 * Record batches (lz4, 1 KB half-random values) and Produce frames are built before anything is timed,
 * so the measured time is the server's (plus loopback), not the load generator's encoding. It measures
 * only; it asserts correctness (no error codes, every record fetched back) but never timings.
 */
import { Buffer } from "node:buffer"
import { randomBytes } from "node:crypto"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { Api, ApiVersions, CreateTopics, Fetch, Metadata, Produce, RecordBatch } from "@clustermirror/protocol"
import { ServerProcess } from "@clustermirror/testkit"
import * as Baseline from "./Baseline.js"
import { decode, KafkaConnection } from "./KafkaConnection.js"
import * as Profile from "./Profile.js"
import * as Report from "./Report.js"

export interface Options {
  /** Record value bytes to produce per acks setting (and to fetch back). */
  readonly totalBytes: number
  readonly recordSize: number
  readonly recordsPerBatch: number
  readonly partitions: number
  /** Batches per partition in one Produce request. */
  readonly batchesPerPartition: number
  readonly connections: number
  /** Produce requests in flight per connection. */
  readonly maxInFlight: number
  readonly fetchPartitionMaxBytes: number
  /** Directory for `--cpu-prof` output, when profiling. */
  readonly cpuProfileDir: string | undefined
}

export const defaults: Omit<Options, "totalBytes" | "cpuProfileDir"> = {
  recordSize: 1024,
  recordsPerBatch: 32,
  partitions: 4,
  batchesPerPartition: 4,
  connections: 2,
  maxInFlight: 4,
  fetchPartitionMaxBytes: 4 * 1024 * 1024
}

const PRODUCE_VERSION = 9
const FETCH_VERSION = 12
const CLIENT_ID = "clustermirror-bench"
/** Distinct batches and request frames cycled through; enough that no two in-flight requests share bytes. */
const BATCH_POOL = 256
const FRAME_POOL = 32
const WARMUP_TOPIC = "bench-warmup"
/** Share of the workload produced, untimed, before the measured phases. */
const WARMUP_SHARE = 0.05

/** A 1 KB value: half random (what lz4 cannot shrink), half a repeated phrase (what it can). */
const recordValue = (size: number): Buffer => {
  const half = Math.floor(size / 2)
  const text = Buffer.from("clustermirror benchmark payload ".repeat(Math.ceil((size - half) / 32)))
  return Buffer.concat([randomBytes(half), text.subarray(0, size - half)])
}

interface Workload {
  readonly batches: ReadonlyArray<Buffer>
  readonly batchBytes: number
  readonly uncompressedBytes: number
}

const buildBatches = (o: Options): Workload => {
  const batches: Buffer[] = []
  let batchBytes = 0
  let uncompressedBytes = 0
  const now = Date.now()
  for (let i = 0; i < BATCH_POOL; i++) {
    const records = Array.from({ length: o.recordsPerBatch }, (_, j) => ({
      key: Buffer.from(`k${i}-${j}`),
      value: recordValue(o.recordSize)
    }))
    const uncompressed = RecordBatch.build({ records, timestamp: now })
    const batch = RecordBatch.build({ records, timestamp: now, compression: RecordBatch.Compression.lz4 })
    batches.push(batch)
    batchBytes += batch.length
    uncompressedBytes += uncompressed.length
  }
  return { batches, batchBytes, uncompressedBytes }
}

interface Plan {
  readonly frames: ReadonlyArray<Buffer>
  /** Record batch bytes of each frame (the same for every frame of a plan, up to compression noise). */
  readonly frameBatchBytes: ReadonlyArray<number>
  readonly requests: number
  readonly recordsPerRequest: number
  readonly recordsPerPartition: number
}

const planProduce = (o: Options, w: Workload, topic: string, acks: number): Plan => {
  const recordsPerRequest = o.partitions * o.batchesPerPartition * o.recordsPerBatch
  const requests = Math.max(1, Math.round(o.totalBytes / (recordsPerRequest * o.recordSize)))
  const frames: Buffer[] = []
  const frameBatchBytes: number[] = []
  let b = 0
  for (let f = 0; f < FRAME_POOL; f++) {
    let bytes = 0
    const partitionData = Array.from({ length: o.partitions }, (_, index) => {
      const parts = Array.from({ length: o.batchesPerPartition }, () => w.batches[b++ % w.batches.length]!)
      const records = Buffer.concat(parts)
      bytes += records.length
      return { index, records }
    })
    frames.push(encodeProduce(topic, acks, partitionData))
    frameBatchBytes.push(bytes)
  }
  return {
    frames,
    frameBatchBytes,
    requests,
    recordsPerRequest,
    recordsPerPartition: (requests * recordsPerRequest) / o.partitions
  }
}

const encodeProduce = (
  topic: string,
  acks: number,
  partitionData: ReadonlyArray<{ index: number; records: Buffer }>
): Buffer => {
  const r = Api.encodeRequest(Produce.api, PRODUCE_VERSION, 0, CLIENT_ID, {
    transactionalId: null,
    acks,
    timeoutMs: 30_000,
    topicData: [{ name: topic, partitionData }]
  })
  if (r._tag === "Left") throw new Error(r.left.message)
  return r.right
}

const sumOver = (p: Plan, count: number): number => {
  let total = 0
  for (let i = 0; i < count; i++) total += p.frameBatchBytes[i % p.frameBatchBytes.length]!
  return total
}

/** Sends the plan's requests over pipelined connections; fails on any error code in a response. */
const runProduce = async (conns: ReadonlyArray<KafkaConnection>, p: Plan, maxInFlight: number): Promise<void> => {
  let next = 0
  const check = (frame: Buffer): void => {
    const res = decode(Produce.api, PRODUCE_VERSION, frame)
    for (const t of res.responses)
      for (const part of t.partitionResponses)
        if (part.errorCode !== 0)
          throw new Error(
            `produce to ${t.name}-${part.index} failed with error ${part.errorCode}: ${part.errorMessage}`
          )
  }
  const worker = async (conn: KafkaConnection): Promise<void> => {
    const window: Promise<void>[] = []
    while (next < p.requests) {
      const i = next++
      window.push(conn.sendEncoded(p.frames[i % p.frames.length]!).then(check))
      if (window.length >= maxInFlight) await window.shift()
    }
    await Promise.all(window)
  }
  await Promise.all(conns.map(worker))
}

/** Fetches one partition from offset 0 up to `endOffset`; returns batch bytes and records received. */
const fetchPartition = async (
  conn: KafkaConnection,
  topic: string,
  partition: number,
  endOffset: number,
  partitionMaxBytes: number
): Promise<{ bytes: number; records: number }> => {
  let offset = 0
  let bytes = 0
  let records = 0
  while (offset < endOffset) {
    const res = await conn.request(Fetch.api, FETCH_VERSION, {
      replicaId: -1,
      maxWaitMs: 500,
      minBytes: 1,
      maxBytes: 64 * 1024 * 1024,
      isolationLevel: 0,
      sessionId: 0,
      sessionEpoch: -1,
      topics: [{ topic, partitions: [{ partition, fetchOffset: BigInt(offset), partitionMaxBytes }] }],
      forgottenTopicsData: [],
      rackId: ""
    })
    if (res.errorCode !== 0) throw new Error(`fetch failed with error ${res.errorCode}`)
    const part = res.responses[0]?.partitions[0]
    if (part === undefined) throw new Error(`fetch of ${topic}-${partition} returned no partition`)
    if (part.errorCode !== 0) throw new Error(`fetch of ${topic}-${partition} failed with error ${part.errorCode}`)
    const data = part.records
    if (data === null || data.length === 0) {
      if (Number(part.highWatermark) <= offset)
        throw new Error(`${topic}-${partition} ends at ${part.highWatermark}, expected ${endOffset}`)
      continue
    }
    const buf = Buffer.from(data.buffer, data.byteOffset, data.length)
    const { batches } = RecordBatch.split(buf)
    if (batches.length === 0)
      throw new Error(`fetch of ${topic}-${partition} at ${offset} returned no complete batch (raise the max bytes)`)
    for (const b of batches) {
      bytes += b.size
      records += RecordBatch.recordCount(buf, b.position)
    }
    const last = batches[batches.length - 1]!
    offset = RecordBatch.lastOffset(buf, last.position) + 1
  }
  return { bytes, records }
}

const negotiate = async (conn: KafkaConnection): Promise<Map<number, { min: number; max: number }>> => {
  const res = await conn.request(ApiVersions.api, 3, {
    clientSoftwareName: CLIENT_ID,
    clientSoftwareVersion: "0.0.0"
  })
  if (res.errorCode !== 0) throw new Error(`ApiVersions failed with error ${res.errorCode}`)
  return new Map(res.apiKeys.map((k) => [k.apiKey, { min: k.minVersion, max: k.maxVersion }]))
}

const pick = (versions: Map<number, { min: number; max: number }>, key: number, want: number, name: string): number => {
  const r = versions.get(key)
  if (r === undefined || r.min > want) throw new Error(`server does not support ${name} v${want}`)
  return Math.min(want, r.max)
}

const createTopic = async (
  conn: KafkaConnection,
  versions: Map<number, { min: number; max: number }>,
  name: string,
  partitions: number
): Promise<void> => {
  const v = pick(versions, CreateTopics.api.key, 7, "CreateTopics")
  const res = await conn.request(CreateTopics.api, v, {
    topics: [{ name, numPartitions: partitions, replicationFactor: 1, assignments: [], configs: [] }],
    timeoutMs: 30_000,
    validateOnly: false
  })
  for (const t of res.topics)
    if (t.errorCode !== 0 && t.errorCode !== 36)
      throw new Error(`creating ${t.name} failed with error ${t.errorCode}: ${t.errorMessage}`)
  const mv = pick(versions, Metadata.api.key, 9, "Metadata")
  const deadline = Date.now() + 30_000
  for (;;) {
    const md = await conn.request(Metadata.api, mv, { topics: [{ name }], allowAutoTopicCreation: false })
    const t = md.topics.find((x) => x.name === name)
    if (t !== undefined && t.errorCode === 0 && t.partitions.filter((p) => p.leaderId >= 0).length === partitions)
      return
    if (Date.now() > deadline) throw new Error(`topic ${name} has no leaders after 30 s`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

const MB = 1024 * 1024

/** Runs `f`, timing it and taking the CPU seconds of the process under test and of this (load) process. */
const measure = async <A>(
  cpuSeconds: () => number,
  f: () => Promise<A>,
  windows?: Array<Profile.Window>
): Promise<Report.Measured<A>> => {
  const startUs = Profile.nowUs()
  const cpu0 = cpuSeconds()
  const client0 = process.cpuUsage()
  const t0 = performance.now()
  const value = await f()
  const seconds = (performance.now() - t0) / 1000
  const client = process.cpuUsage(client0)
  windows?.push({ startUs, endUs: Profile.nowUs() })
  return {
    value,
    seconds,
    cpuSeconds: cpuSeconds() - cpu0,
    loadCpuSeconds: (client.user + client.system) / 1e6
  }
}

/** Runs the suite and returns the rows and facts the report prints and saves. */
export const run = async (o: Options): Promise<Report.Result> => {
  const log = (line: string): void => {
    process.stdout.write(`${line}\n`)
  }
  log(`building ${BATCH_POOL} lz4 batches of ${o.recordsPerBatch} x ${o.recordSize} B records`)
  const work = buildBatches(o)
  const compressionRatio = work.batchBytes / work.uncompressedBytes
  const acks1 = planProduce(o, work, "bench-acks-1", 1)
  const acksAll = planProduce(o, work, "bench-acks-all", -1)
  const batchBytes = sumOver(acks1, acks1.requests)
  const records = acks1.requests * acks1.recordsPerRequest
  log(
    `workload: ${acks1.requests} Produce requests, ${records} records, ${(records * o.recordSize) / MB} MB of values, ` +
      `${(batchBytes / MB).toFixed(1)} MB of lz4 batches (compressed/uncompressed ${compressionRatio.toFixed(3)})`
  )

  const rows: Report.Row[] = []
  const scratch = mkdtempSync(join(tmpdir(), "clustermirror-bench-baseline-"))
  try {
    // Baseline first, on an idle machine, with the exact frames the broker gets.
    const baseline = await Baseline.start(join(scratch, "sink.bin"))
    try {
      const sunk = await measure(baseline.cpuSeconds, () =>
        baseline.produce(acks1.frames, acks1.requests, o.connections)
      )
      rows.push(Report.row("baseline produce (socket → writeSync)", batchBytes, records, sunk))
      log(`baseline produce: ${sunk.value} bytes in ${sunk.seconds.toFixed(2)} s`)
      const read = await measure(baseline.cpuSeconds, () => baseline.fetch(sunk.value, o.partitions))
      rows.push(Report.row("baseline fetch (readSync → socket)", batchBytes, records, read))
      log(`baseline fetch: ${read.value} bytes in ${read.seconds.toFixed(2)} s`)
    } finally {
      await baseline.stop()
    }
    const baselinePeakRssMb = baseline.peakRssMb()

    log("starting the server")
    const server = await ServerProcess.start({
      config: {
        "num.partitions": o.partitions,
        "auto.create.topics.enable": false,
        "group.initial.rebalance.delay.ms": 0
      },
      tempPrefix: "clustermirror-bench-",
      ...(o.cpuProfileDir === undefined ? {} : { cpuProfileDir: o.cpuProfileDir })
    })
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined
    let serverPeakRssMb = 0
    const serverWindows: Profile.Window[] = []
    try {
      const admin = await KafkaConnection.open(server.port, CLIENT_ID)
      const versions = await negotiate(admin)
      pick(versions, Produce.api.key, PRODUCE_VERSION, "Produce")
      pick(versions, Fetch.api.key, FETCH_VERSION, "Fetch")
      await createTopic(admin, versions, "bench-acks-1", o.partitions)
      await createTopic(admin, versions, "bench-acks-all", o.partitions)
      await createTopic(admin, versions, WARMUP_TOPIC, o.partitions)
      const conns = await Promise.all(
        Array.from({ length: o.connections }, () => KafkaConnection.open(server.port, CLIENT_ID))
      )
      // Untimed, so that the first measured phase does not pay for the server's JIT warm-up alone.
      const warmup = planProduce({ ...o, totalBytes: o.totalBytes * WARMUP_SHARE }, work, WARMUP_TOPIC, 1)
      await runProduce(conns, warmup, o.maxInFlight)

      for (const [label, plan] of [
        ["produce acks=1", acks1],
        ["produce acks=-1", acksAll]
      ] as const) {
        const m = await measure(server.cpuSeconds, () => runProduce(conns, plan, o.maxInFlight), serverWindows)
        rows.push(Report.row(label, sumOver(plan, plan.requests), records, m))
        log(`${label}: ${m.seconds.toFixed(2)} s`)
      }
      for (const c of conns) c.close()

      const fetchConns = await Promise.all(
        Array.from({ length: o.partitions }, () => KafkaConnection.open(server.port, CLIENT_ID))
      )
      const got = await measure(
        server.cpuSeconds,
        () =>
          Promise.all(
            fetchConns.map((c, p) =>
              fetchPartition(c, "bench-acks-1", p, acks1.recordsPerPartition, o.fetchPartitionMaxBytes)
            )
          ),
        serverWindows
      )
      const fetchedBytes = got.value.reduce((a, g) => a + g.bytes, 0)
      const fetchedRecords = got.value.reduce((a, g) => a + g.records, 0)
      if (fetchedRecords !== records) throw new Error(`fetched ${fetchedRecords} records, produced ${records}`)
      rows.push(Report.row("fetch v12 (consumer)", fetchedBytes, fetchedRecords, got))
      log(`fetch: ${fetchedBytes} bytes, ${fetchedRecords} records in ${got.seconds.toFixed(2)} s`)
      for (const c of fetchConns) c.close()
      admin.close()
    } finally {
      serverPeakRssMb = server.peakRssMb()
      exit = await server.stop()
    }
    return {
      suite: "produce-fetch",
      date: new Date().toISOString(),
      options: { ...o, produceVersion: PRODUCE_VERSION, fetchVersion: FETCH_VERSION },
      workload: {
        requests: acks1.requests,
        records,
        recordValueBytes: records * o.recordSize,
        batchBytes,
        compressionRatio
      },
      rows: Report.withBaselineRatios(rows, [
        ["produce", "baseline produce (socket → writeSync)"],
        ["fetch", "baseline fetch (readSync → socket)"]
      ]),
      serverPeakRssMb,
      baselinePeakRssMb,
      serverExit: exit,
      serverWindows
    }
  } finally {
    rmSync(scratch, { recursive: true, force: true })
  }
}
