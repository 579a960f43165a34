import { describe, expect, it } from "@effect/vitest"
import { MetadataRecords } from "@clustermirror/protocol"
import * as ControllerResult from "../src/ControllerResult.js"
import type * as ControllerState from "../src/ControllerState.js"
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

const floor = (nextProducerId: bigint) => ids(-1, -1n, nextProducerId)
const raise = (minProducerId: bigint) => (s: ControllerState.ControllerState) =>
  ControllerResult.of(ProducerIdControl.raiseFloor(s.producerIds, minProducerId), undefined)

describe("ProducerIdControl.raiseFloor (BumpLeaderEpochs' MinProducerId)", () => {
  it("moves the next producer id above a mirrored id beyond it; the next block starts there", () => {
    withBroker
      .and([ids(1, 2n, 1000n)])
      .when(raise(4321n))
      .then([floor(4322n)], undefined)
      .when((s) => ProducerIdControl.allocateProducerIds(s.producerIds, 1, 2n, s.cluster))
      .then([ids(1, 2n, 5322n)], { brokerId: 1, firstProducerId: 4322n, size: 1000n })
  })

  it("below the next block, sets the floor at the next block: every block handed out is below it", () => {
    const after = withBroker
      .and([ids(1, 2n, 1000n), ids(1, 2n, 2000n)])
      .when(raise(500n))
      .then([floor(2000n)], undefined)
    expect(after.state.producerIds).toEqual({ nextProducerId: 2000n, floor: 2000n })
  })

  it("emits nothing when the floor is already above the id, or for -1", () => {
    const floored = withBroker.and([floor(3000n)])
    floored.when(raise(2999n)).then([], undefined)
    floored.when(raise(-1n)).then([], undefined)
    withBroker.when(raise(-1n)).then([], undefined)
    // From an empty state (no block yet) the floor is the id above the mirrored one.
    withBroker.when(raise(0n)).then([floor(1n)], undefined)
    floored.when(raise(3000n)).then([floor(3001n)], undefined)
  })
})

describe("ProducerIdControl.replay", () => {
  it("dies when the next producer id does not move forward", () => {
    expect(() => withBroker.and([ids(1, 2n, 1000n), ids(1, 2n, 1000n)])).toThrow(/replay died on record 1/)
  })

  it("dies on a floor below the next block or not above the last floor", () => {
    expect(() => withBroker.and([ids(1, 2n, 1000n), floor(999n)])).toThrow(/replay died on record 1/)
    expect(() => withBroker.and([floor(1000n), floor(1000n)])).toThrow(/replay died on record 1/)
  })
})
