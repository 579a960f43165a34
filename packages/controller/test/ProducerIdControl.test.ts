import { describe, expect, it } from "@effect/vitest"
import { MetadataRecords } from "@clustermirror/protocol"
import { bootstrap, given } from "../src/ControllerTest.js"
import * as ProducerIdControl from "../src/ProducerIdControl.js"
import { registerRecord } from "./clusterFixtures.js"

const ids = (brokerId: number, brokerEpoch: bigint, nextProducerId: bigint) =>
  MetadataRecords.make("ProducerIdsRecord", { brokerId, brokerEpoch, nextProducerId })

const withBroker = given([...bootstrap, registerRecord(1, 2n)])

describe("ProducerIdControl.allocateProducerIds", () => {
  it("hands out consecutive blocks of 1000", () => {
    withBroker
      .when((s) => ProducerIdControl.allocateProducerIds(s.producerIds, 1, 2n, s.cluster))
      .then([ids(1, 2n, 1000n)], { brokerId: 1, firstProducerId: 0n, size: 1000n })
      .when((s) => ProducerIdControl.allocateProducerIds(s.producerIds, 1, 2n, s.cluster))
      .then([ids(1, 2n, 2000n)], { brokerId: 1, firstProducerId: 1000n, size: 1000n })
  })

  it("fails with STALE_BROKER_EPOCH for an unknown broker or another epoch", () => {
    withBroker
      .when((s) => ProducerIdControl.allocateProducerIds(s.producerIds, 2, 2n, s.cluster))
      .thenFails({ _tag: "StaleBrokerEpoch", message: "No broker registration found for broker id 2" })
    withBroker
      .when((s) => ProducerIdControl.allocateProducerIds(s.producerIds, 1, 7n, s.cluster))
      .thenFails({ _tag: "StaleBrokerEpoch", message: "Expected broker epoch 2, but got broker epoch 7" })
  })

  it("fails with UNKNOWN_SERVER_ERROR once the int64 space is used up", () => {
    withBroker
      .and([ids(1, 2n, 9223372036854775000n)])
      .when((s) => ProducerIdControl.allocateProducerIds(s.producerIds, 1, 2n, s.cluster))
      .thenFails({ _tag: "UnknownServerError" })
  })
})

describe("ProducerIdControl.replay", () => {
  it("dies when the next producer id does not move forward", () => {
    expect(() => withBroker.and([ids(1, 2n, 1000n), ids(1, 2n, 1000n)])).toThrow(/replay died on record 1/)
  })
})
