/**
 * Metadata changes during the fault phase: topics created on a cluster one after another (a few
 * seconds apart) through its brokers, each sent again until the cluster acknowledges it, so that faults
 * of the controllers (a quorum's active controller, a standby) hit requests in flight. A creation that
 * an earlier, interrupted attempt committed already is acknowledged by TOPIC_ALREADY_EXISTS. The
 * check afterwards: every acknowledged topic is in the cluster's metadata.
 */
import type { ClusterClient } from "@clustermirror/client"
import { CreateTopics, Errors } from "@clustermirror/protocol"

export interface MetadataLoad {
  /** Stops creating (the creation in flight is finished first). */
  readonly stop: () => Promise<void>
  /** The topics acknowledged so far. */
  readonly acknowledged: () => ReadonlyArray<string>
  /** Creations sent again after a failure (a controller fault), and the failures by error. */
  readonly retries: () => number
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

export const start = (admin: ClusterClient.Client, prefix: string, intervalMs: number): MetadataLoad => {
  const acked: Array<string> = []
  let retries = 0
  let stopping = false
  const createOne = async (name: string): Promise<void> => {
    for (;;) {
      try {
        const r = await admin.sendToAnyBroker(CreateTopics.api, {
          topics: [{ name, numPartitions: 1, replicationFactor: 3, assignments: [], configs: [] }],
          timeoutMs: 15_000,
          validateOnly: false
        })
        const code = r.topics[0]?.errorCode ?? Errors.ErrorCode.UNKNOWN_SERVER_ERROR
        if (code === 0 || code === Errors.ErrorCode.TOPIC_ALREADY_EXISTS) {
          acked.push(name)
          return
        }
      } catch {
        // A fault in flight: sent again below.
      }
      if (stopping) return
      retries++
      await sleep(250)
    }
  }
  const loop = (async () => {
    for (let n = 0; !stopping; n++) {
      await createOne(`${prefix}-${n}`)
      await sleep(intervalMs)
    }
  })()
  return {
    stop: async () => {
      stopping = true
      await loop
    },
    acknowledged: () => acked,
    retries: () => retries
  }
}
