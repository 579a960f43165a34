/**
 * Broker registrations (Kafka's `ClusterControlManager`): who is registered, with which epoch,
 * incarnation, listeners, rack and supported features, and whether each broker is fenced or in
 * controlled shutdown. Owns the cluster slice of the controller state and the decisions on
 * BrokerRegistration, BrokerHeartbeat, UnregisterBroker and session expiry.
 *
 * Decide functions are pure: time, the next broker epoch (the offset the registration record will
 * get) and heartbeat times come in as inputs; heartbeat times are soft state (`BrokerHeartbeats`) and
 * never part of this state. Moving partition leadership away from a fenced or shutting-down broker
 * is replication's job: the runtime asks `ReplicationControl` for those records, using
 * `noLongerAvailable` on the states before and after.
 */
import { type BrokerHeartbeat, type BrokerRegistration, MetadataRecords } from "@clustermirror/protocol"
import { Either } from "effect"
import * as BrokerHeartbeats from "./BrokerHeartbeats.js"
import * as ControllerError from "./ControllerError.js"
import * as ControllerResult from "./ControllerResult.js"
import { contains, METADATA_VERSION, type VersionRange } from "./FeatureControl.js"
import { PersistentMap } from "./internal/PersistentMap.js"

export interface Listener {
  readonly name: string
  readonly host: string
  readonly port: number
  readonly securityProtocol: number
}

export interface Registration {
  readonly id: number
  /** The offset of the RegisterBrokerRecord that created this incarnation's registration. */
  readonly epoch: bigint
  readonly incarnationId: string
  readonly listeners: ReadonlyArray<Listener>
  readonly supportedFeatures: ReadonlyMap<string, VersionRange>
  readonly rack: string | null
  readonly fenced: boolean
  readonly inControlledShutdown: boolean
  readonly logDirs: ReadonlyArray<string>
}

export interface State {
  readonly brokers: ReadonlyMap<number, Registration>
}

export const empty: State = { brokers: PersistentMap.empty() }

/** The cluster records this module replays. */
export type ClusterRecord = MetadataRecords.MetadataRecordOf<
  | "RegisterBrokerRecord"
  | "UnregisterBrokerRecord"
  | "FenceBrokerRecord"
  | "UnfenceBrokerRecord"
  | "BrokerRegistrationChangeRecord"
>

/** BrokerRegistrationChangeRecord.Fenced values. */
export const FencingChange = { UNFENCE: -1, NONE: 0, FENCE: 1 } as const
/** BrokerRegistrationChangeRecord.InControlledShutdown values. */
export const ControlledShutdownChange = { NONE: 0, IN_CONTROLLED_SHUTDOWN: 1 } as const

// ---------------------------------------------------------------------------------------------------
// Replay

const withBroker = (state: State, registration: Registration): State => ({
  brokers: PersistentMap.of(state.brokers).set(registration.id, registration)
})

const registered = (state: State, id: number, epoch: bigint, what: string): Registration => {
  const r = state.brokers.get(id)
  if (r === undefined) throw new Error(`${what} for unregistered broker ${id}`)
  if (r.epoch !== epoch) throw new Error(`${what} for broker ${id} epoch ${epoch}, registered epoch is ${r.epoch}`)
  return r
}

/**
 * Applies one cluster record. Dies on a record that contradicts the state (a change for a broker or
 * epoch that is not registered, a broker epoch going backwards, an unknown change value): that is a
 * corrupt log, never a request error.
 */
export const replay = (state: State, record: ClusterRecord): State => {
  switch (record.type) {
    case "RegisterBrokerRecord": {
      const d = record.data
      const previous = state.brokers.get(d.brokerId)
      if (previous !== undefined && d.brokerEpoch < previous.epoch)
        throw new Error(`RegisterBrokerRecord moves broker ${d.brokerId} epoch back from ${previous.epoch}`)
      return withBroker(state, {
        id: d.brokerId,
        epoch: d.brokerEpoch,
        incarnationId: d.incarnationId,
        listeners: d.endPoints.map((e) => ({
          name: e.name,
          host: e.host,
          port: e.port,
          securityProtocol: e.securityProtocol
        })),
        supportedFeatures: new Map(
          d.features.map((f) => [f.name, { min: f.minSupportedVersion, max: f.maxSupportedVersion }])
        ),
        rack: d.rack,
        fenced: d.fenced,
        inControlledShutdown: d.inControlledShutdown,
        logDirs: d.logDirs
      })
    }
    case "UnregisterBrokerRecord": {
      registered(state, record.data.brokerId, record.data.brokerEpoch, "UnregisterBrokerRecord")
      return { brokers: PersistentMap.of(state.brokers).delete(record.data.brokerId) }
    }
    case "FenceBrokerRecord": {
      const r = registered(state, record.data.id, record.data.epoch, "FenceBrokerRecord")
      return withBroker(state, { ...r, fenced: true })
    }
    case "UnfenceBrokerRecord": {
      const r = registered(state, record.data.id, record.data.epoch, "UnfenceBrokerRecord")
      return withBroker(state, { ...r, fenced: false })
    }
    case "BrokerRegistrationChangeRecord": {
      const d = record.data
      const r = registered(state, d.brokerId, d.brokerEpoch, "BrokerRegistrationChangeRecord")
      let fenced = r.fenced
      if (d.fenced === FencingChange.FENCE) fenced = true
      else if (d.fenced === FencingChange.UNFENCE) fenced = false
      else if (d.fenced !== FencingChange.NONE) throw new Error(`BrokerRegistrationChangeRecord fenced=${d.fenced}`)
      let inControlledShutdown = r.inControlledShutdown
      if (d.inControlledShutdown === ControlledShutdownChange.IN_CONTROLLED_SHUTDOWN) inControlledShutdown = true
      else if (d.inControlledShutdown !== ControlledShutdownChange.NONE)
        throw new Error(`BrokerRegistrationChangeRecord inControlledShutdown=${d.inControlledShutdown}`)
      // Log directories are only replaced when the record carries them.
      const logDirs = d.logDirs.length > 0 ? d.logDirs : r.logDirs
      return withBroker(state, { ...r, fenced, inControlledShutdown, logDirs })
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// Queries

/** Brokers that may lead and take new replicas: unfenced and not shutting down, by id. */
export const liveBrokers = (state: State): ReadonlyArray<number> =>
  [...state.brokers.values()]
    .filter((b) => !b.fenced && !b.inControlledShutdown)
    .map((b) => b.id)
    .sort((a, b) => a - b)

export interface UsableBroker {
  readonly id: number
  readonly rack: string | null
  readonly fenced: boolean
}

/**
 * Brokers replica placement may consider (Kafka's usable brokers): every registered broker not in
 * controlled shutdown, with its rack and whether it is fenced, by id. Placement puts new replicas on
 * unfenced ones only.
 */
export const usableBrokers = (state: State): ReadonlyArray<UsableBroker> =>
  [...state.brokers.values()]
    .filter((b) => !b.inControlledShutdown)
    .map((b) => ({ id: b.id, rack: b.rack, fenced: b.fenced }))
    .sort((a, b) => a.id - b.id)

export interface BrokerEndpoint {
  readonly nodeId: number
  readonly host: string
  readonly port: number
  readonly rack: string | null
}

/**
 * Where clients reach each unfenced broker on the named listener (the first listener of each broker
 * when none is named), by id; brokers without that listener are left out, as Kafka's metadata does.
 */
export const brokerEndpoints = (state: State, listenerName?: string): ReadonlyArray<BrokerEndpoint> =>
  [...state.brokers.values()]
    .filter((b) => !b.fenced)
    .sort((a, b) => a.id - b.id)
    .flatMap((b) => {
      const l = listenerName === undefined ? b.listeners[0] : b.listeners.find((x) => x.name === listenerName)
      return l === undefined ? [] : [{ nodeId: b.id, host: l.host, port: l.port, rack: b.rack }]
    })

/** The supported feature ranges of every registered broker, for feature updates. */
export const brokerSupportedFeatures = (state: State): ReadonlyMap<number, ReadonlyMap<string, VersionRange>> =>
  new Map([...state.brokers.values()].map((b) => [b.id, b.supportedFeatures]))

/**
 * Brokers that were available (unfenced, not in controlled shutdown) in `before` and are not in
 * `after`: whose leaderships and ISR memberships the runtime must now move.
 */
export const noLongerAvailable = (before: State, after: State): ReadonlyArray<number> => {
  const now = new Set(liveBrokers(after))
  return liveBrokers(before).filter((id) => !now.has(id))
}

/** Whether the broker holds a live session: registered, unfenced and heard from within the timeout. */
export const hasValidSession = (
  state: State,
  heartbeats: BrokerHeartbeats.BrokerHeartbeats,
  brokerId: number,
  now: number,
  sessionTimeoutMs: number = BrokerHeartbeats.DEFAULT_SESSION_TIMEOUT_MS
): boolean => {
  const r = state.brokers.get(brokerId)
  return r !== undefined && !r.fenced && BrokerHeartbeats.isWithinSession(heartbeats, brokerId, now, sessionTimeoutMs)
}

// ---------------------------------------------------------------------------------------------------
// Decide

const fence = (r: Registration) =>
  MetadataRecords.make("BrokerRegistrationChangeRecord", {
    brokerId: r.id,
    brokerEpoch: r.epoch,
    fenced: FencingChange.FENCE
  })

const unfence = (r: Registration) =>
  MetadataRecords.make("BrokerRegistrationChangeRecord", {
    brokerId: r.id,
    brokerEpoch: r.epoch,
    fenced: FencingChange.UNFENCE
  })

const enterControlledShutdown = (r: Registration) =>
  MetadataRecords.make("BrokerRegistrationChangeRecord", {
    brokerId: r.id,
    brokerEpoch: r.epoch,
    inControlledShutdown: ControlledShutdownChange.IN_CONTROLLED_SHUTDOWN
  })

export interface RegisterBrokerContext {
  /** The offset the RegisterBrokerRecord will be written at: the new incarnation's epoch. */
  readonly nextBrokerEpoch: bigint
  readonly clusterId: string
  /** `FeatureControl.finalizedFeatures` of the current state. */
  readonly finalizedFeatures: ReadonlyMap<string, number>
  readonly now: number
  readonly heartbeats: BrokerHeartbeats.BrokerHeartbeats
  readonly sessionTimeoutMs?: number
}

export interface RegisterBrokerReply {
  readonly brokerEpoch: bigint
}

/**
 * BrokerRegistration (62): a RegisterBrokerRecord. A new incarnation gets `nextBrokerEpoch` and
 * starts fenced; the same incarnation registering again amends its registration and keeps its
 * epoch, fencing and shutdown state. Fails with INCONSISTENT_CLUSTER_ID for another cluster's id,
 * DUPLICATE_BROKER_REGISTRATION while another incarnation of the id holds a live session,
 * BROKER_ID_NOT_REGISTERED for ZooKeeper-migrating brokers, UNSUPPORTED_VERSION when the broker
 * does not support a finalized feature level. After commit the runtime touches the broker's heartbeat.
 */
export const registerBroker = (
  state: State,
  request: BrokerRegistration.Request,
  ctx: RegisterBrokerContext
): Either.Either<
  ControllerResult.ControllerResult<RegisterBrokerReply>,
  | ControllerError.InconsistentClusterId
  | ControllerError.DuplicateBrokerRegistration
  | ControllerError.BrokerIdNotRegistered
  | ControllerError.UnsupportedVersion
> => {
  if (request.clusterId !== ctx.clusterId)
    return Either.left(
      new ControllerError.InconsistentClusterId({
        message: `Expected cluster ID ${ctx.clusterId}, but got cluster ID ${request.clusterId}`
      })
    )
  const existing = state.brokers.get(request.brokerId)
  const sameIncarnation = existing !== undefined && existing.incarnationId === request.incarnationId
  if (
    existing !== undefined &&
    !sameIncarnation &&
    hasValidSession(state, ctx.heartbeats, request.brokerId, ctx.now, ctx.sessionTimeoutMs)
  )
    return Either.left(
      new ControllerError.DuplicateBrokerRegistration({ message: "Another broker is registered with that broker id." })
    )
  if (request.isMigratingZkBroker)
    return Either.left(
      new ControllerError.BrokerIdNotRegistered({ message: "Controller does not support registering ZK brokers." })
    )

  const features = [...request.features]
  // A broker that does not state its metadata.version range is taken to support only the first one.
  if (!features.some((f) => f.name === METADATA_VERSION))
    features.push({ name: METADATA_VERSION, minSupportedVersion: 1, maxSupportedVersion: 1 })
  const listed = new Set(features.map((f) => f.name))
  // Finalized features the broker does not list must be disabled (level 0) for it to join.
  const checks = [
    ...features,
    ...[...ctx.finalizedFeatures.keys()]
      .filter((name) => !listed.has(name))
      .map((name) => ({ name, minSupportedVersion: 0, maxSupportedVersion: 0 }))
  ]
  for (const f of checks) {
    const finalized = ctx.finalizedFeatures.get(f.name) ?? (f.name === METADATA_VERSION ? 1 : 0)
    if (!contains({ min: f.minSupportedVersion, max: f.maxSupportedVersion }, finalized))
      return Either.left(
        new ControllerError.UnsupportedVersion({
          message:
            `Unable to register because the broker does not support finalized version ${finalized} of ${f.name}. ` +
            `The broker wants a version between ${f.minSupportedVersion} and ${f.maxSupportedVersion}, inclusive.`
        })
      )
  }

  const brokerEpoch = sameIncarnation ? existing.epoch : ctx.nextBrokerEpoch
  const record = MetadataRecords.make("RegisterBrokerRecord", {
    brokerId: request.brokerId,
    incarnationId: request.incarnationId,
    brokerEpoch,
    endPoints: request.listeners.map((l) => ({
      name: l.name,
      host: l.host,
      port: l.port,
      securityProtocol: l.securityProtocol
    })),
    features,
    rack: request.rack,
    fenced: sameIncarnation ? existing.fenced : true,
    inControlledShutdown: sameIncarnation ? existing.inControlledShutdown : false,
    logDirs: request.logDirs
  })
  return Either.right(ControllerResult.of([record], { brokerEpoch }))
}

export interface HeartbeatContext {
  readonly now: number
  /** The highest committed offset of the metadata log. */
  readonly metadataOffsetCommitted: bigint
  /** Whether the broker still leads partitions (from replication); false when unknown. */
  readonly hasLeaderships?: boolean
}

export interface HeartbeatReply {
  readonly isCaughtUp: boolean
  readonly isFenced: boolean
  readonly inControlledShutdown: boolean
  readonly shouldShutDown: boolean
}

/**
 * BrokerHeartbeat (63), Kafka's broker state machine:
 * - fenced: wantShutDown → shut down now; caught up (its metadata offset reached its committed
 *   registration record) and not wantFence → BrokerRegistrationChangeRecord fenced=-1;
 * - unfenced: wantFence → fenced=1 (and shut down now with wantShutDown); wantShutDown → controlled
 *   shutdown (inControlledShutdown=1) while it leads partitions, else fenced=1 and shut down now;
 * - in controlled shutdown: shut down now (fenced=1) once it leads nothing.
 * Fails with STALE_BROKER_EPOCH for an unknown broker or another epoch. After an accepted heartbeat
 * the runtime touches the broker's heartbeat.
 */
export const processHeartbeat = (
  state: State,
  request: BrokerHeartbeat.Request,
  ctx: HeartbeatContext
): Either.Either<ControllerResult.ControllerResult<HeartbeatReply>, ControllerError.StaleBrokerEpoch> => {
  const r = state.brokers.get(request.brokerId)
  if (r === undefined)
    return Either.left(
      new ControllerError.StaleBrokerEpoch({
        message: `No broker registration found for broker id ${request.brokerId}`
      })
    )
  if (r.epoch !== request.brokerEpoch)
    return Either.left(
      new ControllerError.StaleBrokerEpoch({
        message: `Expected broker epoch ${r.epoch}, but got broker epoch ${request.brokerEpoch}`
      })
    )
  // The registration record sits at the broker epoch's offset; a broker cannot have read past an
  // uncommitted one.
  const isCaughtUp = request.currentMetadataOffset >= r.epoch && ctx.metadataOffsetCommitted >= r.epoch
  const hasLeaderships = ctx.hasLeaderships ?? false
  const reply = (isFenced: boolean, inControlledShutdown: boolean, shouldShutDown: boolean) => ({
    isCaughtUp,
    isFenced,
    inControlledShutdown,
    shouldShutDown
  })

  if (r.fenced) {
    if (request.wantShutDown) return Either.right(ControllerResult.response(reply(true, false, true)))
    if (!request.wantFence && isCaughtUp)
      return Either.right(ControllerResult.of([unfence(r)], reply(false, r.inControlledShutdown, false)))
    return Either.right(ControllerResult.response(reply(true, false, false)))
  }
  if (r.inControlledShutdown) {
    if (hasLeaderships) return Either.right(ControllerResult.response(reply(false, true, false)))
    return Either.right(ControllerResult.of([fence(r)], reply(true, false, true)))
  }
  if (request.wantFence) return Either.right(ControllerResult.of([fence(r)], reply(true, false, request.wantShutDown)))
  if (request.wantShutDown) {
    if (hasLeaderships)
      return Either.right(ControllerResult.of([enterControlledShutdown(r)], reply(false, true, false)))
    return Either.right(ControllerResult.of([fence(r)], reply(true, false, true)))
  }
  return Either.right(ControllerResult.response(reply(false, false, false)))
}

/**
 * Fences every unfenced broker whose session expired (no contact within `sessionTimeoutMs`, Kafka's
 * `broker.session.timeout.ms`): a BrokerRegistrationChangeRecord fenced=1 each. Responds with the
 * fenced broker ids. Brokers the heartbeats do not track count as expired: `BrokerHeartbeats.seed`
 * them when a controller becomes active.
 */
export const fenceStaleBrokers = (
  state: State,
  heartbeats: BrokerHeartbeats.BrokerHeartbeats,
  now: number,
  sessionTimeoutMs: number = BrokerHeartbeats.DEFAULT_SESSION_TIMEOUT_MS
): ControllerResult.ControllerResult<ReadonlyArray<number>> => {
  const stale = [...state.brokers.values()]
    .filter((b) => !b.fenced && !BrokerHeartbeats.isWithinSession(heartbeats, b.id, now, sessionTimeoutMs))
    .sort((a, b) => a.id - b.id)
  return ControllerResult.of(
    stale.map(fence),
    stale.map((b) => b.id)
  )
}

/**
 * UnregisterBroker (64): an UnregisterBrokerRecord for the broker's current epoch. Fails with
 * BROKER_ID_NOT_REGISTERED for an unknown id.
 */
export const unregisterBroker = (
  state: State,
  brokerId: number
): Either.Either<ControllerResult.ControllerResult<void>, ControllerError.BrokerIdNotRegistered> => {
  const r = state.brokers.get(brokerId)
  if (r === undefined)
    return Either.left(
      new ControllerError.BrokerIdNotRegistered({ message: `Broker ID ${brokerId} is not currently registered` })
    )
  return Either.right(
    ControllerResult.of([MetadataRecords.make("UnregisterBrokerRecord", { brokerId, brokerEpoch: r.epoch })], undefined)
  )
}
