/**
 * Producer ids after a KIP-1279 failover, on the real controller: brokers hold blocks of ids, a stopping
 * mirror partition's BumpLeaderEpochs raises the controller's floor above its highest mirrored id, and each
 * broker's ProducerIdManager, once its image has the floor, gives up the block it holds for one above it.
 */
import { describe, expect, it } from "@effect/vitest"
import { QuorumController } from "@clustermirror/controller"
import { MetadataDelta, MetadataImage, MetadataLog, MetadataProvenance } from "@clustermirror/metadata-log"
import { ProducerIdManager } from "@clustermirror/transaction-coordinator"
import { Effect, Either } from "effect"

const CLUSTER = "AAAAAAAAAAAAAAAAAAAAAB"

const register = (c: QuorumController.QuorumController, brokerId: number) =>
  c.registerBroker({
    brokerId,
    clusterId: CLUSTER,
    incarnationId: `AAAAAAAAAAAAAAAAAAAA${String.fromCharCode(65 + brokerId)}A`,
    listeners: [{ name: "PLAINTEXT", host: "127.0.0.1", port: 9000 + brokerId, securityProtocol: 0 }],
    features: [
      { name: "metadata.version", minSupportedVersion: 7, maxSupportedVersion: 30 },
      { name: "mirror.version", minSupportedVersion: 0, maxSupportedVersion: 1 }
    ],
    rack: null,
    isMigratingZkBroker: false,
    logDirs: [],
    previousBrokerEpoch: -1n
  })

/** A broker: its image follows the controller's log when told to, its manager asks the controller for blocks. */
const broker = (c: QuorumController.QuorumController, log: MetadataLog.MetadataLogService, brokerId: number) => {
  let image = MetadataImage.empty
  let offset = 0
  const follow = async () => {
    const read = await Effect.runPromise(Effect.orDie(log.readFrom(offset)))
    for (const bytes of read.batches) {
      const { records, provenance } = Either.getOrThrow(MetadataLog.decodeBatch(bytes))
      if (provenance.lastOffset < offset) continue
      image = MetadataDelta.make(image, records).apply(MetadataProvenance.make(provenance.lastOffset, 1, 0))
      offset = provenance.lastOffset + 1
    }
  }
  const ids = new ProducerIdManager.ProducerIdManager({
    allocateBlock: async () => {
      const epoch = c.current.cluster.brokers.get(brokerId)!.epoch
      const block = Either.getOrThrow(await c.allocateProducerIds(brokerId, epoch))
      return { firstProducerId: block.firstProducerId, size: block.size }
    },
    floor: () => image.producerIds.floor
  })
  return { follow, ids, image: () => image }
}

describe("Producer id floor after a failover", () => {
  it("a broker holding a block below the floor takes a new one above it once its image has the floor", async () => {
    const log = MetadataLog.makeMemory()
    const c = await QuorumController.QuorumController.open({ nodeId: 1000, clusterId: CLUSTER, log })
    for (const id of [1, 2]) expect((await register(c, id)).errorCode).toBe(0)
    const b1 = broker(c, log, 1)
    const b2 = broker(c, log, 2)
    // Both brokers hold a block: [0, 1000) and [1000, 2000).
    expect([await b1.ids.allocate(), await b1.ids.allocate(), await b2.ids.allocate()]).toEqual([0n, 1n, 1000n])

    // The partitions stopping saw producers 500 and 1500 mirrored from another cluster.
    const res = await c.bumpLeaderEpochs({ topics: [], minProducerId: 1500n })
    expect(res.errorCode).toBe(0)
    // Every block handed out so far is below the floor: it sits at the next block.
    expect(c.current.producerIds).toEqual({ nextProducerId: 2000n, floor: 2000n })

    // Broker 2 has not replayed the floor yet: it still hands out from its block (the window the README names).
    expect(await b2.ids.allocate()).toBe(1001n)
    await b1.follow()
    await b2.follow()
    expect(b1.image().producerIds.floor).toBe(2000n)
    const after = [await b1.ids.allocate(), await b1.ids.allocate(), await b2.ids.allocate()]
    expect(after).toEqual([2000n, 2001n, 3000n])
    expect(after.every((id) => id > 1500n)).toBe(true)

    // A later failover with ids above the next block: the floor moves past them, the blocks follow.
    await c.bumpLeaderEpochs({ topics: [], minProducerId: 7777n })
    await b1.follow()
    expect(await b1.ids.allocate()).toBe(7778n)
    expect(c.current.producerIds).toEqual({ nextProducerId: 8778n, floor: 7778n })
    await c.close()
  })
})
