import { describe, expect, it } from "@effect/vitest"
import { MetadataRecords } from "@clustermirror/protocol"
import * as BrokerHeartbeats from "../src/BrokerHeartbeats.js"
import * as ClusterControl from "../src/ClusterControl.js"
import * as ControllerState from "../src/ControllerState.js"
import { bootstrap, given } from "../src/ControllerTest.js"
import * as FeatureControl from "../src/FeatureControl.js"
import {
  change,
  heartbeat,
  registerCtx,
  registerRecord,
  registration,
  SUPPORTED_FEATURES,
  uuid
} from "./clusterFixtures.js"

// bootstrap takes offsets 0 and 1, so the first registration is written at offset 2.
const withBroker1 = given([...bootstrap, registerRecord(1, 2n)])
const withLiveBroker1 = withBroker1.and([change(1, 2n, -1)])
const hbCtx = { now: 0, metadataOffsetCommitted: 100n }

describe("ClusterControl.registerBroker", () => {
  it("registers a new incarnation fenced, with the record's offset as its epoch", () => {
    const after = given(bootstrap)
      .when((s, { nextOffset }) => ClusterControl.registerBroker(s.cluster, registration(1), registerCtx(nextOffset)))
      .then([registerRecord(1, 2n)], { brokerEpoch: 2n })
    const b = after.state.cluster.brokers.get(1)!
    expect(b).toMatchObject({ id: 1, epoch: 2n, fenced: true, inControlledShutdown: false, rack: null })
    expect(ClusterControl.liveBrokers(after.state.cluster)).toEqual([])
  })

  it("keeps listeners, rack and features", () => {
    const after = given(bootstrap)
      .when((s, { nextOffset }) =>
        ClusterControl.registerBroker(
          s.cluster,
          registration(3, { rack: "r1", logDirs: [uuid(77)] }),
          registerCtx(nextOffset)
        )
      )
      .then([registerRecord(3, 2n, { rack: "r1", logDirs: [uuid(77)] })], { brokerEpoch: 2n })
    const b = after.state.cluster.brokers.get(3)!
    expect(b.listeners).toEqual([{ name: "PLAINTEXT", host: "localhost", port: 9095, securityProtocol: 0 }])
    expect(b.supportedFeatures.get(FeatureControl.MIRROR_VERSION)).toEqual({ min: 0, max: 1 })
    expect(b.logDirs).toEqual([uuid(77)])
  })

  it("fails with INCONSISTENT_CLUSTER_ID for another cluster's id", () => {
    given(bootstrap)
      .when((s, { nextOffset }) =>
        ClusterControl.registerBroker(s.cluster, registration(1, { clusterId: "other" }), registerCtx(nextOffset))
      )
      .thenFails({
        _tag: "InconsistentClusterId",
        message: "Expected cluster ID MkU3OEVBNTcwNTJENDM2Qg, but got cluster ID other"
      })
  })

  it("fails with DUPLICATE_BROKER_REGISTRATION while another incarnation holds a live session", () => {
    const heartbeats = BrokerHeartbeats.touch(BrokerHeartbeats.empty, 1, 1000)
    const other = registration(1, { incarnationId: uuid(500) })
    withLiveBroker1
      .when((s, { nextOffset }) =>
        ClusterControl.registerBroker(s.cluster, other, registerCtx(nextOffset, { heartbeats, now: 10_000 }))
      )
      .thenFails({ _tag: "DuplicateBrokerRegistration", message: "Another broker is registered with that broker id." })
  })

  it("lets a new incarnation in once the old session expired, fenced with a new epoch", () => {
    const heartbeats = BrokerHeartbeats.touch(BrokerHeartbeats.empty, 1, 1000)
    const other = registration(1, { incarnationId: uuid(500) })
    withLiveBroker1
      .when((s, { nextOffset }) =>
        ClusterControl.registerBroker(s.cluster, other, registerCtx(nextOffset, { heartbeats, now: 10_001 }))
      )
      .then([registerRecord(1, 4n, { incarnationId: uuid(500) })], { brokerEpoch: 4n })
  })

  it("lets a new incarnation in at once when the old one is fenced", () => {
    const heartbeats = BrokerHeartbeats.touch(BrokerHeartbeats.empty, 1, 1000)
    const other = registration(1, { incarnationId: uuid(500) })
    withBroker1
      .when((s, { nextOffset }) =>
        ClusterControl.registerBroker(s.cluster, other, registerCtx(nextOffset, { heartbeats, now: 1001 }))
      )
      .then([registerRecord(1, 3n, { incarnationId: uuid(500) })], { brokerEpoch: 3n })
  })

  it("amends the registration of the same incarnation, keeping epoch, fencing and shutdown state", () => {
    const heartbeats = BrokerHeartbeats.touch(BrokerHeartbeats.empty, 1, 1000)
    const moved = registration(1, { rack: "r2" })
    withLiveBroker1
      .when((s, { nextOffset }) =>
        ClusterControl.registerBroker(s.cluster, moved, registerCtx(nextOffset, { heartbeats, now: 1001 }))
      )
      .then([registerRecord(1, 2n, { rack: "r2", fenced: false })], { brokerEpoch: 2n })
  })

  it("fails with UNSUPPORTED_VERSION when the broker cannot run a finalized feature level", () => {
    const tooOld = registration(1, {
      features: [
        SUPPORTED_FEATURES[0]!,
        { name: FeatureControl.MIRROR_VERSION, minSupportedVersion: 0, maxSupportedVersion: 0 }
      ]
    })
    given(bootstrap)
      .when((s, { nextOffset }) => ClusterControl.registerBroker(s.cluster, tooOld, registerCtx(nextOffset)))
      .thenFails({
        _tag: "UnsupportedVersion",
        message:
          "Unable to register because the broker does not support finalized version 1 of mirror.version. " +
          "The broker wants a version between 0 and 0, inclusive."
      })
  })

  it("fails with UNSUPPORTED_VERSION when the broker does not list a finalized feature", () => {
    const noMirror = registration(1, { features: [SUPPORTED_FEATURES[0]!] })
    given(bootstrap)
      .when((s, { nextOffset }) => ClusterControl.registerBroker(s.cluster, noMirror, registerCtx(nextOffset)))
      .thenFails({ _tag: "UnsupportedVersion" })
  })

  it("takes a broker that lists no metadata.version for one that supports only level 1", () => {
    const legacy = registration(1, { features: [SUPPORTED_FEATURES[1]!] })
    given(bootstrap)
      .when((s, { nextOffset }) => ClusterControl.registerBroker(s.cluster, legacy, registerCtx(nextOffset)))
      .thenFails({
        _tag: "UnsupportedVersion",
        message:
          "Unable to register because the broker does not support finalized version 30 of metadata.version. " +
          "The broker wants a version between 1 and 1, inclusive."
      })
  })

  it("fails with BROKER_ID_NOT_REGISTERED for a ZooKeeper-migrating broker", () => {
    given(bootstrap)
      .when((s, { nextOffset }) =>
        ClusterControl.registerBroker(
          s.cluster,
          registration(1, { isMigratingZkBroker: true }),
          registerCtx(nextOffset)
        )
      )
      .thenFails({ _tag: "BrokerIdNotRegistered" })
  })
})

describe("ClusterControl.processHeartbeat", () => {
  it("fails with STALE_BROKER_EPOCH for an unregistered broker", () => {
    given(bootstrap)
      .when((s) => ClusterControl.processHeartbeat(s.cluster, heartbeat(7, 2n), hbCtx))
      .thenFails({ _tag: "StaleBrokerEpoch", message: "No broker registration found for broker id 7" })
  })

  it("fails with STALE_BROKER_EPOCH for another epoch", () => {
    withBroker1
      .when((s) => ClusterControl.processHeartbeat(s.cluster, heartbeat(1, 1n), hbCtx))
      .thenFails({ _tag: "StaleBrokerEpoch", message: "Expected broker epoch 2, but got broker epoch 1" })
  })

  it("keeps a broker fenced until it has caught up with its registration", () => {
    withBroker1
      .when((s) => ClusterControl.processHeartbeat(s.cluster, heartbeat(1, 2n, { currentMetadataOffset: 1n }), hbCtx))
      .then([], { isCaughtUp: false, isFenced: true, inControlledShutdown: false, shouldShutDown: false })
  })

  it("does not count an uncommitted registration as caught up", () => {
    withBroker1
      .when((s) =>
        ClusterControl.processHeartbeat(s.cluster, heartbeat(1, 2n), { now: 0, metadataOffsetCommitted: 1n })
      )
      .then([], { isCaughtUp: false, isFenced: true, inControlledShutdown: false, shouldShutDown: false })
  })

  it("unfences a caught-up broker", () => {
    const after = withBroker1
      .when((s) => ClusterControl.processHeartbeat(s.cluster, heartbeat(1, 2n, { currentMetadataOffset: 2n }), hbCtx))
      .then([change(1, 2n, -1)], {
        isCaughtUp: true,
        isFenced: false,
        inControlledShutdown: false,
        shouldShutDown: false
      })
    expect(ClusterControl.liveBrokers(after.state.cluster)).toEqual([1])
  })

  it("keeps a caught-up broker fenced when it wants to be fenced", () => {
    withBroker1
      .when((s) => ClusterControl.processHeartbeat(s.cluster, heartbeat(1, 2n, { wantFence: true }), hbCtx))
      .then([], { isCaughtUp: true, isFenced: true, inControlledShutdown: false, shouldShutDown: false })
  })

  it("lets a fenced broker shut down at once", () => {
    withBroker1
      .when((s) => ClusterControl.processHeartbeat(s.cluster, heartbeat(1, 2n, { wantShutDown: true }), hbCtx))
      .then([], { isCaughtUp: true, isFenced: true, inControlledShutdown: false, shouldShutDown: true })
  })

  it("answers an unfenced broker's plain heartbeat without records", () => {
    withLiveBroker1
      .when((s) => ClusterControl.processHeartbeat(s.cluster, heartbeat(1, 2n), hbCtx))
      .then([], { isCaughtUp: true, isFenced: false, inControlledShutdown: false, shouldShutDown: false })
  })

  it("fences an unfenced broker that wants to be fenced", () => {
    const after = withLiveBroker1
      .when((s) => ClusterControl.processHeartbeat(s.cluster, heartbeat(1, 2n, { wantFence: true }), hbCtx))
      .then([change(1, 2n, 1)], {
        isCaughtUp: true,
        isFenced: true,
        inControlledShutdown: false,
        shouldShutDown: false
      })
    expect(after.state.cluster.brokers.get(1)!.fenced).toBe(true)
  })

  it("fences and shuts down a broker that wants both", () => {
    withLiveBroker1
      .when((s) =>
        ClusterControl.processHeartbeat(s.cluster, heartbeat(1, 2n, { wantFence: true, wantShutDown: true }), hbCtx)
      )
      .then([change(1, 2n, 1)], { isCaughtUp: true, isFenced: true, inControlledShutdown: false, shouldShutDown: true })
  })

  it("shuts down at once a broker that leads nothing", () => {
    withLiveBroker1
      .when((s) => ClusterControl.processHeartbeat(s.cluster, heartbeat(1, 2n, { wantShutDown: true }), hbCtx))
      .then([change(1, 2n, 1)], { isCaughtUp: true, isFenced: true, inControlledShutdown: false, shouldShutDown: true })
  })

  it("takes a leader through controlled shutdown until its leaderships moved", () => {
    const leading = { ...hbCtx, hasLeaderships: true }
    const inShutdown = withLiveBroker1
      .when((s) => ClusterControl.processHeartbeat(s.cluster, heartbeat(1, 2n, { wantShutDown: true }), leading))
      .then([change(1, 2n, 0, 1)], {
        isCaughtUp: true,
        isFenced: false,
        inControlledShutdown: true,
        shouldShutDown: false
      })
    expect(ClusterControl.liveBrokers(inShutdown.state.cluster)).toEqual([])
    expect(ClusterControl.usableBrokers(inShutdown.state.cluster)).toEqual([])
    expect(ClusterControl.noLongerAvailable(withLiveBroker1.state.cluster, inShutdown.state.cluster)).toEqual([1])
    const stillLeading = inShutdown
      .when((s) => ClusterControl.processHeartbeat(s.cluster, heartbeat(1, 2n, { wantShutDown: true }), leading))
      .then([], { isCaughtUp: true, isFenced: false, inControlledShutdown: true, shouldShutDown: false })
    stillLeading
      .when((s) => ClusterControl.processHeartbeat(s.cluster, heartbeat(1, 2n, { wantShutDown: true }), hbCtx))
      .then([change(1, 2n, 1)], { isCaughtUp: true, isFenced: true, inControlledShutdown: false, shouldShutDown: true })
  })
})

describe("ClusterControl.fenceStaleBrokers", () => {
  const two = withLiveBroker1.and([registerRecord(2, 4n), change(2, 4n, -1)])

  it("fences unfenced brokers past the session timeout, and only those", () => {
    const heartbeats = BrokerHeartbeats.touch(BrokerHeartbeats.touch(BrokerHeartbeats.empty, 1, 0), 2, 5000)
    const after = two
      .when((s) => ClusterControl.fenceStaleBrokers(s.cluster, heartbeats, 9001))
      .then([change(1, 2n, 1)], [1])
    expect(ClusterControl.liveBrokers(after.state.cluster)).toEqual([2])
    after.when((s) => ClusterControl.fenceStaleBrokers(s.cluster, heartbeats, 9001)).then([], [])
  })

  it("uses broker.session.timeout.ms 9000 unless told otherwise", () => {
    const heartbeats = BrokerHeartbeats.seed([1, 2], 0)
    two.when((s) => ClusterControl.fenceStaleBrokers(s.cluster, heartbeats, 9000)).then([], [])
    two
      .when((s) => ClusterControl.fenceStaleBrokers(s.cluster, heartbeats, 3001, 3000))
      .then([change(1, 2n, 1), change(2, 4n, 1)], [1, 2])
  })

  it("counts brokers the heartbeats do not track as expired", () => {
    two
      .when((s) => ClusterControl.fenceStaleBrokers(s.cluster, BrokerHeartbeats.seed([2], 0), 1))
      .then([change(1, 2n, 1)], [1])
  })
})

describe("ClusterControl.unregisterBroker", () => {
  it("writes an UnregisterBrokerRecord for the current epoch", () => {
    const after = withLiveBroker1
      .when((s) => ClusterControl.unregisterBroker(s.cluster, 1))
      .then([MetadataRecords.make("UnregisterBrokerRecord", { brokerId: 1, brokerEpoch: 2n })], undefined)
    expect(after.state.cluster.brokers.size).toBe(0)
  })

  it("fails with BROKER_ID_NOT_REGISTERED for an unknown broker", () => {
    withLiveBroker1
      .when((s) => ClusterControl.unregisterBroker(s.cluster, 9))
      .thenFails({ _tag: "BrokerIdNotRegistered", message: "Broker ID 9 is not currently registered" })
  })
})

describe("ClusterControl queries", () => {
  const state = given([
    ...bootstrap,
    registerRecord(1, 2n, { rack: "a" }),
    registerRecord(2, 3n, {
      rack: "b",
      endPoints: [
        { name: "INTERNAL", host: "h2", port: 1, securityProtocol: 0 },
        { name: "PLAINTEXT", host: "h2", port: 2, securityProtocol: 0 }
      ]
    }),
    registerRecord(3, 4n),
    change(1, 2n, -1),
    change(2, 3n, -1)
  ]).state.cluster

  it("liveBrokers: unfenced, not shutting down", () => {
    expect(ClusterControl.liveBrokers(state)).toEqual([1, 2])
  })

  it("usableBrokers: every broker not shutting down, with rack and fencing", () => {
    expect(ClusterControl.usableBrokers(state)).toEqual([
      { id: 1, rack: "a", fenced: false },
      { id: 2, rack: "b", fenced: false },
      { id: 3, rack: null, fenced: true }
    ])
  })

  it("brokerEndpoints: unfenced brokers on the named listener, else their first", () => {
    expect(ClusterControl.brokerEndpoints(state, "PLAINTEXT")).toEqual([
      { nodeId: 1, host: "localhost", port: 9093, rack: "a" },
      { nodeId: 2, host: "h2", port: 2, rack: "b" }
    ])
    expect(ClusterControl.brokerEndpoints(state, "INTERNAL")).toEqual([{ nodeId: 2, host: "h2", port: 1, rack: "b" }])
    expect(ClusterControl.brokerEndpoints(state).map((e) => e.port)).toEqual([9093, 1])
  })

  it("brokerSupportedFeatures: ranges by broker", () => {
    const f = ClusterControl.brokerSupportedFeatures(state)
    expect([...f.keys()]).toEqual([1, 2, 3])
    expect(f.get(2)!.get(FeatureControl.METADATA_VERSION)).toEqual({ min: 7, max: 30 })
  })

  it("hasValidSession: unfenced and heard from within the timeout", () => {
    const hb = BrokerHeartbeats.seed([1, 3], 0)
    expect(ClusterControl.hasValidSession(state, hb, 1, 9000)).toBe(true)
    expect(ClusterControl.hasValidSession(state, hb, 1, 9001)).toBe(false)
    expect(ClusterControl.hasValidSession(state, hb, 2, 0)).toBe(false)
    expect(ClusterControl.hasValidSession(state, hb, 3, 0)).toBe(false)
  })
})

describe("ClusterControl.replay", () => {
  const s = withBroker1.state
  const dies = (record: MetadataRecords.MetadataRecord) => () => ControllerState.replay(s, record, 10n)

  it("applies the older Fence/UnfenceBrokerRecords", () => {
    const unfenced = ControllerState.replay(s, MetadataRecords.make("UnfenceBrokerRecord", { id: 1, epoch: 2n }), 3n)
    expect(unfenced.cluster.brokers.get(1)!.fenced).toBe(false)
    const fenced = ControllerState.replay(unfenced, MetadataRecords.make("FenceBrokerRecord", { id: 1, epoch: 2n }), 4n)
    expect(fenced.cluster.brokers.get(1)!.fenced).toBe(true)
  })

  it("dies on changes for unknown brokers or epochs and on unknown change values", () => {
    expect(dies(MetadataRecords.make("FenceBrokerRecord", { id: 5, epoch: 2n }))).toThrow(/unregistered broker 5/)
    expect(dies(MetadataRecords.make("UnfenceBrokerRecord", { id: 1, epoch: 3n }))).toThrow(/epoch 3/)
    expect(dies(change(1, 2n, 2))).toThrow(/fenced=2/)
    expect(dies(change(1, 2n, 0, 3))).toThrow(/inControlledShutdown=3/)
    expect(dies(MetadataRecords.make("UnregisterBrokerRecord", { brokerId: 1, brokerEpoch: 9n }))).toThrow()
    expect(dies(registerRecord(1, 1n))).toThrow(/epoch back/)
  })
})

describe("BrokerHeartbeats", () => {
  it("touch never moves a contact time back; remove forgets", () => {
    const hb = BrokerHeartbeats.touch(BrokerHeartbeats.touch(BrokerHeartbeats.empty, 1, 500), 1, 100)
    expect(hb.lastContactMs.get(1)).toBe(500)
    expect(BrokerHeartbeats.isWithinSession(hb, 1, 9500)).toBe(true)
    expect(BrokerHeartbeats.isWithinSession(hb, 1, 9501)).toBe(false)
    expect(BrokerHeartbeats.isWithinSession(BrokerHeartbeats.remove(hb, 1), 1, 500)).toBe(false)
  })
})
