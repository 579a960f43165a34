/**
 * A broker's log directory as DescribeLogDirs (key 35) and AlterReplicaLogDirs (key 34) see it. A broker
 * keeps every partition under one directory (`log.dirs` takes a single entry), so there are no future
 * replicas: every partition is described in that directory with its size on disk and an offset lag of
 * max(HW - LEO, 0), and a move to another directory is refused with LOG_DIR_NOT_FOUND.
 *
 * Translates only: the partitions and their logs are ReplicaManager's, the directory is `log.dirs`; authorization is the request
 * path's (`@clustermirror/security`).
 */
import { type AlterReplicaLogDirs, type DescribeLogDirs, Errors } from "@clustermirror/protocol"
import * as fs from "node:fs"
import * as path from "node:path"
import type { ReplicaManager } from "./ReplicaManager.js"

/** The size of the volume a directory is on, as `statfs` reports it. */
export interface VolumeSpace {
  readonly totalBytes: bigint
  readonly usableBytes: bigint
}

/** A broker's replicas and its log directory (`log.dirs`, answered as an absolute path). */
export interface Broker {
  readonly replicas: ReplicaManager
  readonly config: { readonly dataDir: string }
}

export interface Options {
  /** The volume's space; throws when the directory cannot be read. Default: `fs.statfsSync`. */
  readonly volumeSpace?: (dir: string) => VolumeSpace
  /** Where a refused move is logged. */
  readonly log?: (line: string) => void
}

const E = Errors.ErrorCode

/** Total and usable (available to this process) bytes of the volume holding `dir`. */
export const statfsSpace = (dir: string): VolumeSpace => {
  const s = fs.statfsSync(dir, { bigint: true })
  return { totalBytes: s.blocks * s.bsize, usableBytes: s.bavail * s.bsize }
}

/**
 * DescribeLogDirs: the one log directory with the partitions asked for (null topics: every partition
 * hosted here). A directory that cannot be read is reported as Kafka reports an offline one:
 * KAFKA_STORAGE_ERROR, no topics, unknown sizes.
 */
export const describeLogDirs = (
  broker: Broker,
  request: DescribeLogDirs.Request,
  options: Options = {}
): DescribeLogDirs.Response => {
  const logDir = path.resolve(broker.config.dataDir)
  let space: VolumeSpace
  try {
    space = (options.volumeSpace ?? statfsSpace)(logDir)
  } catch {
    return {
      throttleTimeMs: 0,
      errorCode: 0,
      results: [
        { errorCode: E.KAFKA_STORAGE_ERROR, logDir, topics: [], totalBytes: -1n, usableBytes: -1n, isCordoned: false }
      ]
    }
  }
  const wanted =
    request.topics === null ? null : new Map(request.topics.map((t) => [t.topic, new Set(t.partitions)] as const))
  const byTopic = new Map<
    string,
    Array<DescribeLogDirs.Response["results"][number]["topics"][number]["partitions"][number]>
  >()
  for (const p of broker.replicas.all()) {
    if (wanted !== null && wanted.get(p.topic)?.has(p.partition) !== true) continue
    let list = byTopic.get(p.topic)
    if (list === undefined) byTopic.set(p.topic, (list = []))
    list.push({
      partitionIndex: p.partition,
      partitionSize: BigInt(p.log.sizeInBytes),
      offsetLag: BigInt(Math.max(p.log.highWatermark - p.log.logEndOffset, 0)),
      isFutureKey: false
    })
  }
  const topics = [...byTopic]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, partitions]) => ({ name, partitions: partitions.sort((a, b) => a.partitionIndex - b.partitionIndex) }))
  return {
    throttleTimeMs: 0,
    errorCode: 0,
    results: [
      {
        errorCode: 0,
        logDir,
        topics,
        totalBytes: space.totalBytes,
        usableBytes: space.usableBytes,
        isCordoned: false
      }
    ]
  }
}

/**
 * AlterReplicaLogDirs: a partition asked into the directory it already is in needs no move (NONE) if
 * hosted here, else REPLICA_NOT_AVAILABLE; any other directory is not one of this broker's:
 * LOG_DIR_NOT_FOUND. Nothing is ever moved.
 */
export const alterReplicaLogDirs = (
  broker: Broker,
  request: AlterReplicaLogDirs.Request,
  options: Options = {}
): AlterReplicaLogDirs.Response => {
  const logDir = path.resolve(broker.config.dataDir)
  const byTopic = new Map<string, Array<{ partitionIndex: number; errorCode: number }>>()
  for (const dir of request.dirs) {
    const known = path.isAbsolute(dir.path) && path.resolve(dir.path) === logDir
    if (!known)
      options.log?.(
        `AlterReplicaLogDirs to ${dir.path} refused: LOG_DIR_NOT_FOUND, this broker has one log directory (${logDir})`
      )
    for (const t of dir.topics) {
      let list = byTopic.get(t.name)
      if (list === undefined) byTopic.set(t.name, (list = []))
      for (const partitionIndex of t.partitions)
        list.push({
          partitionIndex,
          errorCode: !known
            ? E.LOG_DIR_NOT_FOUND
            : broker.replicas.get(t.name, partitionIndex) === undefined
              ? E.REPLICA_NOT_AVAILABLE
              : 0
        })
    }
  }
  return {
    throttleTimeMs: 0,
    results: [...byTopic].map(([topicName, partitions]) => ({ topicName, partitions }))
  }
}
