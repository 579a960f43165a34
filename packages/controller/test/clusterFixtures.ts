import type { BrokerHeartbeat, BrokerRegistration } from "@clustermirror/protocol"
import { MetadataRecords } from "@clustermirror/protocol"
import { Buffer } from "node:buffer"
import * as BrokerHeartbeats from "../src/BrokerHeartbeats.js"
import type * as ClusterControl from "../src/ClusterControl.js"
import * as FeatureControl from "../src/FeatureControl.js"

export const CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"

/** A valid Kafka UUID string distinct for each n. */
export const uuid = (n: number): string => {
  const b = Buffer.alloc(16)
  b.writeUInt32BE(n + 1, 12)
  b[0] = 0x40
  return b.toString("base64url")
}

/** What our brokers support: the controller's own ranges. */
export const SUPPORTED_FEATURES = [
  {
    name: FeatureControl.METADATA_VERSION,
    minSupportedVersion: FeatureControl.MINIMUM_METADATA_VERSION,
    maxSupportedVersion: FeatureControl.LATEST_METADATA_VERSION
  },
  { name: FeatureControl.MIRROR_VERSION, minSupportedVersion: 0, maxSupportedVersion: 1 }
]

export const registration = (
  brokerId: number,
  extra: Partial<BrokerRegistration.Request> = {}
): BrokerRegistration.Request => ({
  brokerId,
  clusterId: CLUSTER_ID,
  incarnationId: uuid(brokerId),
  listeners: [{ name: "PLAINTEXT", host: "localhost", port: 9092 + brokerId, securityProtocol: 0 }],
  features: SUPPORTED_FEATURES,
  rack: null,
  isMigratingZkBroker: false,
  logDirs: [],
  previousBrokerEpoch: -1n,
  ...extra
})

export const heartbeat = (
  brokerId: number,
  brokerEpoch: bigint,
  extra: Partial<BrokerHeartbeat.Request> = {}
): BrokerHeartbeat.Request => ({
  brokerId,
  brokerEpoch,
  currentMetadataOffset: 1_000_000n,
  wantFence: false,
  wantShutDown: false,
  offlineLogDirs: [],
  cordonedLogDirs: null,
  ...extra
})

/** The RegisterBrokerRecord `registerBroker` writes for `registration(brokerId)` at `epoch`. */
export const registerRecord = (
  brokerId: number,
  epoch: bigint,
  extra: Partial<MetadataRecords.MetadataRecordOf<"RegisterBrokerRecord">["data"]> = {}
) =>
  MetadataRecords.make("RegisterBrokerRecord", {
    brokerId,
    incarnationId: uuid(brokerId),
    brokerEpoch: epoch,
    endPoints: [{ name: "PLAINTEXT", host: "localhost", port: 9092 + brokerId, securityProtocol: 0 }],
    features: SUPPORTED_FEATURES,
    rack: null,
    fenced: true,
    inControlledShutdown: false,
    logDirs: [],
    ...extra
  })

export const change = (brokerId: number, brokerEpoch: bigint, fenced: number, inControlledShutdown = 0) =>
  MetadataRecords.make("BrokerRegistrationChangeRecord", { brokerId, brokerEpoch, fenced, inControlledShutdown })

export const registerCtx = (
  nextBrokerEpoch: bigint,
  extra: Partial<ClusterControl.RegisterBrokerContext> = {}
): ClusterControl.RegisterBrokerContext => ({
  nextBrokerEpoch,
  clusterId: CLUSTER_ID,
  finalizedFeatures: new Map([
    [FeatureControl.METADATA_VERSION, FeatureControl.LATEST_METADATA_VERSION],
    [FeatureControl.MIRROR_VERSION, 1]
  ]),
  now: 0,
  heartbeats: BrokerHeartbeats.empty,
  ...extra
})

/**
 * Runs `f` counting the entries that `new Map(entries)` copies meanwhile (every copy a replay makes is
 * one): the work of an immutable update, counted instead of timed.
 */
export const copiedEntries = <A>(f: () => A): { readonly result: A; readonly copied: number } => {
  const Original = globalThis.Map
  let copied = 0
  class Counting<K, V> extends Original<K, V> {
    constructor(entries?: Iterable<readonly [K, V]> | null) {
      super(entries)
      if (entries !== undefined && entries !== null) copied += this.size
    }
  }
  globalThis.Map = Counting as MapConstructor
  try {
    return { result: f(), copied }
  } finally {
    globalThis.Map = Original
  }
}

/**
 * A deep copy of a state in plain values (maps as arrays of entries, in order): what `structuredClone`
 * gives for plain maps, for states whose maps are persistent.
 */
export const plain = (value: unknown): unknown => {
  if (value === null || typeof value !== "object") return value
  if (Array.isArray(value)) return value.map(plain)
  if (Symbol.iterator in value && "size" in value && "get" in value)
    return [...(value as ReadonlyMap<unknown, unknown>)].map(([k, v]) => [plain(k), plain(v)])
  if (value instanceof Uint8Array) return [...value]
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]))
}
