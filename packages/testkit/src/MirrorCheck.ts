/**
 * The mirror verifier: reads the same topics from a source and a destination cluster and checks that
 * the destination holds the source's log byte for byte (KIP-1279): equal topic ids, and batch by batch
 * the same base offset, CRC, partition leader epoch and bytes, up to a bound (by default the smaller of
 * the two high watermarks), from the source's log start offset (Streams, retention or DeleteRecords may
 * have moved it): a destination log starting later misses records, one starting earlier holds records the
 * source removed since, which is not a mismatch.
 *
 * Partitions are read with consumer Fetch requests (READ_UNCOMMITTED) from their leaders, both sides in
 * step, so memory stays at about one fetch response per side and partition. Only the batch headers are
 * read (`RecordBatch` views); records are never decoded or decompressed. It reports the first mismatch
 * per partition and must not write to either cluster.
 *
 * It speaks the protocol over its own small connections rather than through `@clustermirror/client`,
 * because the client's tests depend on this package.
 */
import { Buffer } from "node:buffer"
import { connect, type Socket } from "node:net"
import {
  Api,
  Errors,
  Fetch,
  Header,
  ListOffsets,
  Metadata,
  RecordBatch,
  type Spec,
  ZERO_UUID
} from "@clustermirror/protocol"
import { Either } from "effect"

// ---------------------------------------------------------------------------------------------------
// Results

/** What differs first: where the logs part, or that the topics are not the same topic at all. */
export type MismatchKind = "offset" | "crc" | "leaderEpoch" | "bytes" | "missing" | "topicId"

export interface Mismatch {
  /** The base offset of the first differing batch; -1 for a topic-id mismatch. */
  readonly offset: number
  readonly what: MismatchKind
  /** The source's side of the difference, readable (e.g. a CRC in hex, "none (log ends at 42)"). */
  readonly source: string
  readonly destination: string
}

export interface PartitionComparison {
  /** The topic's name on the source. */
  readonly topic: string
  /** The topic's name on the destination (the same unless a pair of names was given). */
  readonly destinationTopic: string
  readonly partition: number
  readonly sourceTopicId: string
  readonly destinationTopicId: string
  /** Batches compared and found equal (before the first mismatch, below the bound). */
  readonly batches: number
  /** Offsets those batches cover: the sum of LastOffsetDelta + 1. */
  readonly records: number
  /** Bytes of those batches. */
  readonly bytes: number
  /** The source's high watermark when the comparison started. */
  readonly sourceEnd: number
  /** The destination's high watermark when the comparison started. */
  readonly destinationEnd: number
  /** The source's log start offset, where the comparison starts. */
  readonly sourceStart: number
  /** The destination's log start offset; -1 when it has no such partition. */
  readonly destinationStart: number
  readonly firstMismatch: Mismatch | null
}

export interface MirrorComparison {
  /** Sorted by topic, then partition. */
  readonly partitions: ReadonlyArray<PartitionComparison>
  /** No partition has a mismatch. */
  readonly identical: boolean
  /** Bytes of all batches compared and found equal. */
  readonly bytes: number
}

/** Where the comparison ends: at a side's high watermark, or (default) the smaller of both. */
export type Bound = "sourceHighWatermark" | "destinationHighWatermark"

/** A topic known under another name on the destination (e.g. two topics of one cluster in a test). */
export interface TopicPair {
  readonly source: string
  readonly destination: string
}

export interface CompareOptions {
  /** Bootstrap servers of the source cluster, `host:port[,host:port...]`. */
  readonly source: string
  /** Bootstrap servers of the destination cluster. */
  readonly destination: string
  /** Topic names (the same on both clusters) or pairs of names. */
  readonly topics: ReadonlyArray<string | TopicPair>
  /** Default: the smaller of the two high watermarks, per partition. */
  readonly upTo?: Bound
  /** Whether the topic ids must be equal (default true). A pair of topics on one cluster never passes it. */
  readonly checkTopicIds?: boolean
  /** Partitions compared at once (default 8). */
  readonly concurrency?: number
  /** Per-request timeout (default 30 s). */
  readonly requestTimeoutMs?: number
}

// ---------------------------------------------------------------------------------------------------
// Batch comparison (pure)

/** One batch inside a buffer. */
export interface BatchView {
  readonly buffer: Buffer
  readonly position: number
  readonly size: number
}

/** The batches of one side of a partition, in offset order, ending before the bound. */
interface BatchStream {
  /** The next batch, or undefined when there is none below the bound. */
  readonly next: () => Promise<BatchView | undefined>
  /** Where the stream's log ends: a later batch would start here. */
  readonly endOffset: () => number
}

const hex = (n: number): string => `0x${n.toString(16).padStart(8, "0")}`

const describeBatch = (b: BatchView): string =>
  `batch ${RecordBatch.baseOffset(b.buffer, b.position)}-${RecordBatch.lastOffset(b.buffer, b.position)}`

/** The first byte where two batches differ, or where the shorter one ends. */
const firstDifferingByte = (s: BatchView, d: BatchView): number => {
  const n = Math.min(s.size, d.size)
  for (let i = 0; i < n; i++) if (s.buffer[s.position + i] !== d.buffer[d.position + i]) return i
  return n
}

const byteAt = (b: BatchView, i: number): string =>
  i < b.size
    ? `byte ${i} = 0x${b.buffer[b.position + i]!.toString(16).padStart(2, "0")} of ${b.size}`
    : `${b.size} bytes`

/**
 * Compares two batches by their headers and bytes: base offset, then CRC, then partition leader
 * epoch, then every byte. Returns the first difference, or null when they are the same bytes.
 */
export const compareBatch = (source: BatchView, destination: BatchView): Mismatch | null => {
  const so = RecordBatch.baseOffset(source.buffer, source.position)
  const dOffset = RecordBatch.baseOffset(destination.buffer, destination.position)
  if (so !== dOffset)
    return {
      offset: Math.min(so, dOffset),
      what: "offset",
      source: describeBatch(source),
      destination: describeBatch(destination)
    }
  const sc = RecordBatch.crc(source.buffer, source.position)
  const dc = RecordBatch.crc(destination.buffer, destination.position)
  if (sc !== dc) return { offset: so, what: "crc", source: hex(sc), destination: hex(dc) }
  const se = RecordBatch.partitionLeaderEpoch(source.buffer, source.position)
  const de = RecordBatch.partitionLeaderEpoch(destination.buffer, destination.position)
  if (se !== de) return { offset: so, what: "leaderEpoch", source: String(se), destination: String(de) }
  if (
    source.size !== destination.size ||
    source.buffer.compare(
      destination.buffer,
      destination.position,
      destination.position + destination.size,
      source.position,
      source.position + source.size
    ) !== 0
  ) {
    const i = firstDifferingByte(source, destination)
    return { offset: so, what: "bytes", source: byteAt(source, i), destination: byteAt(destination, i) }
  }
  return null
}

export interface StreamComparison {
  readonly batches: number
  readonly records: number
  readonly bytes: number
  readonly firstMismatch: Mismatch | null
}

/** A side's next batch, or where its log ends when it has none left below the bound. */
type Next = BatchView | { readonly endOffset: number }

const isBatch = (n: Next): n is BatchView => "buffer" in n

/** The running count of a comparison; `add` folds in one pair and says whether to go on. */
class Tally {
  batches = 0
  records = 0
  bytes = 0
  firstMismatch: Mismatch | null = null

  add(s: Next, d: Next): boolean {
    if (!isBatch(s) && !isBatch(d)) return false
    if (!isBatch(s) || !isBatch(d)) {
      const present = isBatch(s) ? s : (d as BatchView)
      const absent = (n: Next) => (isBatch(n) ? describeBatch(n) : `none (log ends at ${n.endOffset})`)
      this.firstMismatch = {
        offset: RecordBatch.baseOffset(present.buffer, present.position),
        what: "missing",
        source: absent(s),
        destination: absent(d)
      }
      return false
    }
    this.firstMismatch = compareBatch(s, d)
    if (this.firstMismatch !== null) return false
    this.batches++
    this.records += RecordBatch.lastOffsetDelta(s.buffer, s.position) + 1
    this.bytes += s.size
    return true
  }

  result(): StreamComparison {
    return { batches: this.batches, records: this.records, bytes: this.bytes, firstMismatch: this.firstMismatch }
  }
}

/** Compares two batch streams pairwise until both end or they differ. */
const compareStreams = async (source: BatchStream, destination: BatchStream): Promise<StreamComparison> => {
  const tally = new Tally()
  const side = async (stream: BatchStream): Promise<Next> => (await stream.next()) ?? { endOffset: stream.endOffset() }
  while (tally.add(...(await Promise.all([side(source), side(destination)])))) {}
  return tally.result()
}

/** The complete batches of `bytes` (back to back, as a fetch response holds them) with a base offset below `upTo`. */
const batchesOf = (bytes: Buffer, upTo: number): ReadonlyArray<BatchView> =>
  RecordBatch.split(bytes)
    .batches.filter((ref) => RecordBatch.baseOffset(bytes, ref.position) < upTo)
    .map((ref) => ({ buffer: bytes, position: ref.position, size: ref.size }))

/** Compares two logs held in memory (back-to-back batches, a partial one at the end ignored) up to `upTo`. */
export const compareLogs = (source: Buffer, destination: Buffer, upTo = Number.POSITIVE_INFINITY): StreamComparison => {
  const s = batchesOf(source, upTo)
  const d = batchesOf(destination, upTo)
  const at = (batches: ReadonlyArray<BatchView>, i: number): Next => {
    const b = batches[i]
    if (b !== undefined) return b
    const last = batches[batches.length - 1]
    return { endOffset: last === undefined ? 0 : RecordBatch.lastOffset(last.buffer, last.position) + 1 }
  }
  const tally = new Tally()
  for (let i = 0; tally.add(at(s, i), at(d, i)); i++) {}
  return tally.result()
}

/** The offset the comparison stops at, from both high watermarks. */
export const boundOf = (upTo: Bound | undefined, sourceEnd: number, destinationEnd: number): number =>
  upTo === "sourceHighWatermark"
    ? sourceEnd
    : upTo === "destinationHighWatermark"
      ? destinationEnd
      : Math.min(sourceEnd, destinationEnd)

// ---------------------------------------------------------------------------------------------------
// Network

const CLIENT_ID = "clustermirror-mirror-check"
const METADATA_VERSION = 12
const FETCH_VERSION = 12
const LIST_OFFSETS_VERSION = 7
const EARLIEST_TIMESTAMP = -2n
const MAX_FRAME_BYTES = 1024 * 1024 * 1024
const FETCH_MAX_BYTES = 64 * 1024 * 1024
const PARTITION_MAX_BYTES = 16 * 1024 * 1024
const READ_UNCOMMITTED = 0
/** Attempts of a request whose partition leader moved or is not yet known. */
const LEADER_ATTEMPTS = 50
const LEADER_BACKOFF_MS = 100

const E = Errors.ErrorCode
const LEADER_ERRORS: ReadonlySet<number> = new Set([
  E.NOT_LEADER_OR_FOLLOWER,
  E.LEADER_NOT_AVAILABLE,
  E.FENCED_LEADER_EPOCH,
  E.UNKNOWN_LEADER_EPOCH,
  E.UNKNOWN_TOPIC_OR_PARTITION,
  E.REPLICA_NOT_AVAILABLE
])

const errorName = (code: number): string => Errors.byCode.get(code)?.name ?? `error ${code}`
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))

interface Address {
  readonly host: string
  readonly port: number
}

const parseServers = (servers: string): ReadonlyArray<Address> => {
  const out = servers
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0)
    .map((s) => {
      const i = s.lastIndexOf(":")
      const port = Number(s.slice(i + 1))
      if (i <= 0 || !Number.isInteger(port)) throw new Error(`bad bootstrap server "${s}": expected host:port`)
      return { host: s.slice(0, i), port }
    })
  if (out.length === 0) throw new Error(`no bootstrap servers in "${servers}"`)
  return out
}

/** One pipelined connection: requests matched to responses by correlation id. */
class Link {
  private nextCorrelationId = 1
  private readonly pending = new Map<number, { resolve: (f: Buffer) => void; reject: (e: Error) => void }>()
  private readonly frames = new Header.FrameDecoder(MAX_FRAME_BYTES)
  private failure: Error | undefined

  private constructor(
    private readonly socket: Socket,
    private readonly timeoutMs: number
  ) {
    socket.on("data", (chunk: Buffer) => {
      const r = this.frames.push(chunk)
      if (Either.isLeft(r)) return this.fail(new Error(`bad response framing: ${r.left.message}`))
      for (const frame of r.right) {
        const id = frame.readInt32BE(0)
        const p = this.pending.get(id)
        this.pending.delete(id)
        p?.resolve(frame)
      }
    })
    socket.on("error", (e) => this.fail(e))
    socket.on("close", () => this.fail(new Error("connection closed")))
  }

  static open(address: Address, timeoutMs: number): Promise<Link> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host: address.host, port: address.port, noDelay: true })
      const timer = setTimeout(() => {
        socket.destroy()
        reject(new Error(`connecting to ${address.host}:${address.port} timed out`))
      }, timeoutMs)
      socket.once("error", (e) => {
        clearTimeout(timer)
        reject(e)
      })
      socket.once("connect", () => {
        clearTimeout(timer)
        socket.removeAllListeners("error")
        resolve(new Link(socket, timeoutMs))
      })
    })
  }

  get broken(): boolean {
    return this.failure !== undefined
  }

  private fail(e: Error): void {
    if (this.failure !== undefined) return
    this.failure = e
    for (const p of this.pending.values()) p.reject(e)
    this.pending.clear()
    this.socket.destroy()
  }

  async request<Req extends Spec.Fields, Res extends Spec.Fields>(
    api: Api.ApiDef<Req, Res>,
    version: number,
    body: Spec.StructInput<Req>
  ): Promise<Spec.StructType<Res>> {
    if (this.failure !== undefined) throw this.failure
    const correlationId = this.nextCorrelationId++
    const frame = Api.encodeRequest(api, version, correlationId, CLIENT_ID, body)
    if (Either.isLeft(frame)) throw new Error(frame.left.message)
    const response = new Promise<Buffer>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(correlationId)
        reject(new Error(`${api.name} timed out after ${this.timeoutMs} ms`))
      }, this.timeoutMs)
      this.pending.set(correlationId, {
        resolve: (f) => {
          clearTimeout(timer)
          resolve(f)
        },
        reject: (e) => {
          clearTimeout(timer)
          reject(e)
        }
      })
    })
    this.socket.write(frame.right)
    const decoded = Api.decodeResponse(api, version, await response)
    if (Either.isLeft(decoded)) throw new Error(`${decoded.left.what}: ${decoded.left.message}`)
    return decoded.right.body
  }

  close(): void {
    this.failure ??= new Error("connection closed")
    this.socket.end()
    this.socket.destroy()
  }
}

interface FetchedChunk {
  readonly highWatermark: number
  /** Back-to-back batches, possibly ending with a partial one. */
  readonly records: Buffer
}

interface TopicMetadata {
  readonly errorCode: number
  readonly topicId: string
  /** partition → leader node id (-1 when there is none). */
  readonly leaders: ReadonlyMap<number, number>
}

/** A cluster as the verifier sees it: brokers, topic metadata, one connection per broker. */
class Cluster {
  private readonly bootstrap: ReadonlyArray<Address>
  private brokers = new Map<number, Address>()
  private readonly topics = new Map<string, TopicMetadata>()
  private readonly links = new Map<string, Promise<Link>>()

  constructor(
    readonly name: string,
    servers: string,
    private readonly timeoutMs: number
  ) {
    this.bootstrap = parseServers(servers)
  }

  private link(address: Address): Promise<Link> {
    const key = `${address.host}:${address.port}`
    const cached = this.links.get(key)
    if (cached !== undefined) return cached.then((l) => (l.broken ? this.reconnect(key, address) : l))
    return this.reconnect(key, address)
  }

  private reconnect(key: string, address: Address): Promise<Link> {
    const opened = Link.open(address, this.timeoutMs)
    this.links.set(key, opened)
    opened.catch(() => this.links.delete(key))
    return opened
  }

  /** Refreshes brokers and the named topics from the first server that answers. */
  async refresh(topics: ReadonlyArray<string>): Promise<void> {
    const candidates = [...this.brokers.values(), ...this.bootstrap]
    let lastError: unknown
    for (const address of candidates) {
      try {
        const link = await this.link(address)
        const res = await link.request(Metadata.api, METADATA_VERSION, {
          topics: topics.map((name) => ({ name })),
          allowAutoTopicCreation: false
        })
        this.brokers = new Map(res.brokers.map((b) => [b.nodeId, { host: b.host, port: b.port }]))
        for (const t of res.topics)
          this.topics.set(t.name ?? "", {
            errorCode: t.errorCode,
            topicId: t.topicId,
            leaders: new Map(t.partitions.map((p) => [p.partitionIndex, p.errorCode === 0 ? p.leaderId : -1]))
          })
        return
      } catch (e) {
        lastError = e
      }
    }
    throw new Error(`${this.name}: no broker answered Metadata: ${String(lastError)}`)
  }

  topic(name: string): TopicMetadata | undefined {
    return this.topics.get(name)
  }

  /** One consumer Fetch from `address`: the partition's data, or the error code (or failure) that refused it. */
  private async fetchFrom(
    address: Address,
    topic: string,
    partition: number,
    offset: number
  ): Promise<FetchedChunk | { readonly refused: string; readonly leaderMoved: boolean }> {
    let res: Fetch.Response
    try {
      res = await (await this.link(address)).request(Fetch.api, FETCH_VERSION, {
        replicaId: -1,
        maxWaitMs: 0,
        minBytes: 0,
        maxBytes: FETCH_MAX_BYTES,
        isolationLevel: READ_UNCOMMITTED,
        sessionId: 0,
        sessionEpoch: -1,
        topics: [
          { topic, partitions: [{ partition, fetchOffset: BigInt(offset), partitionMaxBytes: PARTITION_MAX_BYTES }] }
        ]
      })
    } catch (e) {
      // A broken connection or a timeout: the leader may have gone.
      return { refused: e instanceof Error ? e.message : String(e), leaderMoved: true }
    }
    const p = res.responses[0]?.partitions[0]
    const code = res.errorCode !== E.NONE ? res.errorCode : (p?.errorCode ?? E.UNKNOWN_TOPIC_OR_PARTITION)
    if (code !== E.NONE || p === undefined) return { refused: errorName(code), leaderMoved: LEADER_ERRORS.has(code) }
    const data = p.records
    const records = data === null ? Buffer.alloc(0) : Buffer.from(data.buffer, data.byteOffset, data.length)
    return { highWatermark: Number(p.highWatermark), records }
  }

  /** The log start offset of a partition (ListOffsets EARLIEST) from its leader, following leader changes. */
  async logStart(topic: string, partition: number): Promise<number> {
    const what = `${this.name}: ListOffsets ${topic}-${partition} earliest`
    let lastError = ""
    for (let attempt = 1; attempt <= LEADER_ATTEMPTS; attempt++) {
      const address = this.brokers.get(this.topics.get(topic)?.leaders.get(partition) ?? -1)
      if (address === undefined) lastError = `no leader for ${topic}-${partition}`
      else {
        try {
          const res = await (await this.link(address)).request(ListOffsets.api, LIST_OFFSETS_VERSION, {
            replicaId: -1,
            isolationLevel: READ_UNCOMMITTED,
            topics: [{ name: topic, partitions: [{ partitionIndex: partition, timestamp: EARLIEST_TIMESTAMP }] }]
          })
          const p = res.topics[0]?.partitions[0]
          const code = p?.errorCode ?? E.UNKNOWN_TOPIC_OR_PARTITION
          if (code === E.NONE && p !== undefined) return Number(p.offset)
          if (!LEADER_ERRORS.has(code)) throw new Error(`${what} failed: ${errorName(code)}`)
          lastError = errorName(code)
        } catch (e) {
          if (e instanceof Error && e.message.startsWith(what)) throw e
          lastError = e instanceof Error ? e.message : String(e)
        }
      }
      await sleep(LEADER_BACKOFF_MS)
      await this.refresh([topic]).catch(() => undefined)
    }
    throw new Error(`${what}: ${lastError}`)
  }

  /** One consumer Fetch of a partition from its leader, following leader changes. */
  async fetch(topic: string, partition: number, offset: number): Promise<FetchedChunk> {
    const what = `${this.name}: Fetch ${topic}-${partition} at ${offset}`
    let lastError = ""
    for (let attempt = 1; attempt <= LEADER_ATTEMPTS; attempt++) {
      const address = this.brokers.get(this.topics.get(topic)?.leaders.get(partition) ?? -1)
      if (address === undefined) lastError = `no leader for ${topic}-${partition}`
      else {
        const r = await this.fetchFrom(address, topic, partition, offset)
        if (!("refused" in r)) return r
        if (!r.leaderMoved) throw new Error(`${what} failed: ${r.refused}`)
        lastError = r.refused
      }
      await sleep(LEADER_BACKOFF_MS)
      await this.refresh([topic]).catch(() => undefined)
    }
    throw new Error(`${what}: ${lastError}`)
  }

  close(): void {
    for (const l of this.links.values())
      l.then(
        (link) => link.close(),
        () => undefined
      )
    this.links.clear()
  }
}

/** The batches of a partition on one cluster, fetched as they are needed, up to a bound. */
class PartitionReader implements BatchStream {
  private chunk: Buffer = Buffer.alloc(0)
  private refs: ReadonlyArray<RecordBatch.BatchRef> = []
  private index = 0
  private exhausted = false
  highWatermark = -1
  bound = Number.POSITIVE_INFINITY

  constructor(
    private readonly cluster: Cluster,
    private readonly topic: string,
    private readonly partition: number,
    /** Where reading starts. */
    private offset: number
  ) {}

  /** The first fetch, which also tells the high watermark. */
  async open(): Promise<void> {
    await this.load()
  }

  private async load(): Promise<void> {
    const { highWatermark, records } = await this.cluster.fetch(this.topic, this.partition, this.offset)
    this.highWatermark = Math.max(this.highWatermark, highWatermark)
    const { batches } = RecordBatch.split(records)
    if (batches.length === 0 && records.length > 0)
      throw new Error(
        `${this.cluster.name}: ${this.topic}-${this.partition} at ${this.offset}: a batch larger than ${PARTITION_MAX_BYTES} bytes`
      )
    this.chunk = records
    this.refs = batches
    this.index = 0
    if (batches.length === 0) this.exhausted = true
  }

  readonly next = async (): Promise<BatchView | undefined> => {
    for (;;) {
      const ref = this.refs[this.index]
      if (ref !== undefined) {
        if (RecordBatch.baseOffset(this.chunk, ref.position) >= this.bound) return undefined
        this.index++
        this.offset = RecordBatch.lastOffset(this.chunk, ref.position) + 1
        return { buffer: this.chunk, position: ref.position, size: ref.size }
      }
      if (this.exhausted || this.offset >= this.bound) return undefined
      await this.load()
    }
  }

  readonly endOffset = (): number => this.offset
}

const pairOf = (t: string | TopicPair): TopicPair => (typeof t === "string" ? { source: t, destination: t } : t)

interface Task {
  readonly pair: TopicPair
  readonly partition: number
  readonly sourceTopicId: string
  readonly destinationTopicId: string
}

const comparePartition = async (
  source: Cluster,
  destination: Cluster,
  task: Task,
  options: CompareOptions
): Promise<PartitionComparison> => {
  const { pair, partition } = task
  const base = {
    topic: pair.source,
    destinationTopic: pair.destination,
    partition,
    sourceTopicId: task.sourceTopicId,
    destinationTopicId: task.destinationTopicId
  }
  const sourceStart = await source.logStart(pair.source, partition)
  const s = new PartitionReader(source, pair.source, partition, sourceStart)
  await s.open()
  const destinationKnown = destination.topic(pair.destination)?.leaders.has(partition) === true
  const missing = (destinationEnd: number, destinationStart: number, what: string) => ({
    ...base,
    batches: 0,
    records: 0,
    bytes: 0,
    sourceEnd: s.highWatermark,
    destinationEnd,
    sourceStart,
    destinationStart,
    firstMismatch: {
      offset: sourceStart,
      what: "missing" as const,
      source: `partition ${partition} from ${sourceStart}`,
      destination: what
    }
  })
  if (!destinationKnown) return missing(-1, -1, `no partition ${partition} of ${pair.destination}`)
  const destinationStart = await destination.logStart(pair.destination, partition)
  if (destinationStart > sourceStart && s.highWatermark > sourceStart)
    return missing(-1, destinationStart, `log starts at ${destinationStart}`)
  const d = new PartitionReader(destination, pair.destination, partition, sourceStart)
  await d.open()
  const bound = boundOf(options.upTo, s.highWatermark, d.highWatermark)
  s.bound = bound
  d.bound = bound
  const compared = await compareStreams(s, d)
  const topicIdMismatch =
    options.checkTopicIds !== false && task.sourceTopicId !== task.destinationTopicId
      ? { offset: -1, what: "topicId" as const, source: task.sourceTopicId, destination: task.destinationTopicId }
      : null
  return {
    ...base,
    batches: compared.batches,
    records: compared.records,
    bytes: compared.bytes,
    sourceEnd: s.highWatermark,
    destinationEnd: d.highWatermark,
    sourceStart,
    destinationStart,
    firstMismatch: topicIdMismatch ?? compared.firstMismatch
  }
}

/** Runs `f` over `items` with at most `limit` at a time, keeping the order of `items` in the result. */
const mapLimited = async <A, B>(items: ReadonlyArray<A>, limit: number, f: (a: A) => Promise<B>): Promise<B[]> => {
  const out = new Array<B>(items.length)
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++
      out[i] = await f(items[i]!)
    }
  }
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker))
  return out
}

/**
 * Compares every partition of `topics` on both clusters. A topic missing on the source fails the call;
 * a topic or partition missing on the destination is a "missing" mismatch at offset 0. A topic-id
 * difference is reported first (offset -1) but the batches are still compared and counted.
 */
export const compareClusters = async (options: CompareOptions): Promise<MirrorComparison> => {
  const timeoutMs = options.requestTimeoutMs ?? 30_000
  const source = new Cluster("source", options.source, timeoutMs)
  const destination = new Cluster("destination", options.destination, timeoutMs)
  try {
    const pairs = options.topics.map(pairOf)
    await Promise.all([
      source.refresh(pairs.map((p) => p.source)),
      destination.refresh(pairs.map((p) => p.destination))
    ])
    const tasks: Task[] = []
    for (const pair of pairs) {
      const st = source.topic(pair.source)
      if (st === undefined || st.errorCode !== 0)
        throw new Error(
          `source topic ${pair.source}: ${st === undefined ? "not in Metadata" : errorName(st.errorCode)}`
        )
      const dt = destination.topic(pair.destination)
      const destinationTopicId = dt !== undefined && dt.errorCode === 0 ? dt.topicId : ZERO_UUID
      for (const partition of [...st.leaders.keys()].sort((a, b) => a - b))
        tasks.push({ pair, partition, sourceTopicId: st.topicId, destinationTopicId })
    }
    const partitions = await mapLimited(tasks, options.concurrency ?? 8, (t) =>
      comparePartition(source, destination, t, options)
    )
    partitions.sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition))
    return {
      partitions,
      identical: partitions.every((p) => p.firstMismatch === null),
      bytes: partitions.reduce((n, p) => n + p.bytes, 0)
    }
  } finally {
    source.close()
    destination.close()
  }
}
