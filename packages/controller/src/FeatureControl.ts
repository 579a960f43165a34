/**
 * Finalized features of the cluster (Kafka's `FeatureControlManager`): `metadata.version` and
 * KIP-1279's `mirror.version` (0 disabled, 1 enabled). Owns the feature slice of the controller
 * state, the bootstrap records of a new cluster and the UpdateFeatures decision.
 *
 * Decide functions are pure and return records (FeatureLevelRecord only); `replay` is the only way
 * the state changes. It never looks at brokers itself: their supported ranges are passed in.
 */
import { MetadataRecords, type UpdateFeatures } from "@clustermirror/protocol"
import { Either } from "effect"
import * as ControllerError from "./ControllerError.js"
import * as ControllerResult from "./ControllerResult.js"

export const METADATA_VERSION = "metadata.version"
export const MIRROR_VERSION = "mirror.version"

/** IBP_3_3_IV3: the oldest metadata.version a Kafka 4 cluster runs with. */
export const MINIMUM_METADATA_VERSION = 7
/** IBP_4_2_IV2: PartitionChangeRecord v3 and the cluster mirroring APIs (KIP-1279). */
export const LATEST_METADATA_VERSION = 30
/** `mirror.version` 1 needs at least this metadata.version. */
export const MIRROR_MIN_METADATA_VERSION = 30

/** An inclusive range of feature levels. */
export interface VersionRange {
  readonly min: number
  readonly max: number
}

/** The range assumed for a feature a node does not list: only "disabled". */
export const DISABLED: VersionRange = { min: 0, max: 0 }

export const contains = (range: VersionRange, level: number): boolean => level >= range.min && level <= range.max

/** The levels this controller can run with (Kafka's locally supported features). */
export const SUPPORTED: ReadonlyMap<string, VersionRange> = new Map([
  [METADATA_VERSION, { min: MINIMUM_METADATA_VERSION, max: LATEST_METADATA_VERSION }],
  [MIRROR_VERSION, { min: 0, max: 1 }]
])

/** FeatureUpdate.UpgradeType as UpdateFeatures v1+ carries it. */
export const UpgradeType = { UPGRADE: 1, SAFE_DOWNGRADE: 2, UNSAFE_DOWNGRADE: 3 } as const

export interface State {
  /** null until the bootstrap records are replayed. */
  readonly metadataVersion: number | null
  /** Every other finalized feature with a level above 0; absent means 0 (disabled). */
  readonly finalized: ReadonlyMap<string, number>
}

export const empty: State = { metadataVersion: null, finalized: new Map() }

// ---------------------------------------------------------------------------------------------------
// Replay

/** Applies a FeatureLevelRecord. Dies on a level this controller cannot run with: that log is not ours. */
export const replay = (state: State, record: MetadataRecords.MetadataRecordOf<"FeatureLevelRecord">): State => {
  const { name, featureLevel } = record.data
  const range = SUPPORTED.get(name) ?? DISABLED
  if (!contains(range, featureLevel))
    throw new Error(`FeatureLevelRecord ${name}=${featureLevel}: this controller supports ${range.min}-${range.max}`)
  if (name === METADATA_VERSION) return { ...state, metadataVersion: featureLevel }
  const finalized = new Map(state.finalized)
  if (featureLevel === 0) finalized.delete(name)
  else finalized.set(name, featureLevel)
  return { ...state, finalized }
}

// ---------------------------------------------------------------------------------------------------
// Queries

/** Every finalized feature level, metadata.version included once bootstrapped. */
export const finalizedFeatures = (state: State): ReadonlyMap<string, number> => {
  const out = new Map(state.finalized)
  if (state.metadataVersion !== null) out.set(METADATA_VERSION, state.metadataVersion)
  return out
}

export const level = (state: State, feature: string): number =>
  feature === METADATA_VERSION ? (state.metadataVersion ?? 0) : (state.finalized.get(feature) ?? 0)

/** Whether cluster mirroring is on (`mirror.version` ≥ 1): mirror RPCs answer UNSUPPORTED_VERSION otherwise. */
export const isMirrorEnabled = (state: State): boolean => level(state, MIRROR_VERSION) >= 1

// ---------------------------------------------------------------------------------------------------
// Decide

export interface BootstrapOptions {
  readonly metadataVersion?: number
  readonly mirrorVersion?: number
}

/**
 * The first records of a new cluster: a FeatureLevelRecord for metadata.version and one for
 * mirror.version. Defaults: the latest metadata.version with mirroring enabled.
 */
export const bootstrapRecords = (
  options: BootstrapOptions = {}
): Either.Either<ReadonlyArray<MetadataRecords.MetadataRecord>, ControllerError.InvalidUpdateVersion> => {
  const mv = options.metadataVersion ?? LATEST_METADATA_VERSION
  const mirror = options.mirrorVersion ?? 1
  const reason =
    reasonNotSupported(METADATA_VERSION, mv, SUPPORTED, new Map()) ??
    reasonNotSupported(MIRROR_VERSION, mirror, SUPPORTED, new Map()) ??
    dependencyProblem(
      new Map([
        [METADATA_VERSION, mv],
        [MIRROR_VERSION, mirror]
      ])
    )
  if (reason !== undefined) return Either.left(new ControllerError.InvalidUpdateVersion({ message: reason }))
  return Either.right([featureLevelRecord(METADATA_VERSION, mv), featureLevelRecord(MIRROR_VERSION, mirror)])
}

export interface UpdateFeaturesContext {
  /** Supported ranges of every registered broker (`ClusterControl.brokerSupportedFeatures`). */
  readonly brokerSupported: ReadonlyMap<number, ReadonlyMap<string, VersionRange>>
  /** The controller's own ranges; `SUPPORTED` unless a test narrows them. */
  readonly controllerSupported?: ReadonlyMap<string, VersionRange>
  /** The deciding controller's node id, as refusals name it. */
  readonly controllerId?: number
}

/**
 * UpdateFeatures (57): one FeatureLevelRecord per update, all or nothing (Kafka applies the whole
 * request atomically). Fails with INVALID_UPDATE_VERSION when a level is unsupported by the
 * controller or any registered broker, goes the wrong way for its upgrade type, or breaks a feature
 * dependency; with INVALID_REQUEST for a feature named twice. `validateOnly` returns no records.
 */
export const updateFeatures = (
  state: State,
  request: UpdateFeatures.Request,
  ctx: UpdateFeaturesContext
): Either.Either<
  ControllerResult.ControllerResult<void>,
  ControllerError.InvalidUpdateVersion | ControllerError.InvalidRequest
> => {
  const controllerSupported = ctx.controllerSupported ?? SUPPORTED
  const names = new Set<string>()
  for (const u of request.featureUpdates) {
    if (names.has(u.feature))
      return Either.left(
        new ControllerError.InvalidRequest({ message: `Feature ${u.feature} appears more than once in the request.` })
      )
    names.add(u.feature)
  }
  const proposed = new Map(finalizedFeatures(state))
  for (const u of request.featureUpdates) proposed.set(u.feature, Math.max(0, u.maxVersionLevel))

  const records: Array<MetadataRecords.MetadataRecord> = []
  for (const u of request.featureUpdates) {
    // v0 says "downgrade allowed" with a flag; v1+ with UpgradeType (the flag then defaults to false).
    const upgradeType = u.allowDowngrade ? UpgradeType.SAFE_DOWNGRADE : u.upgradeType
    const invalid = (why: string) =>
      Either.left(
        new ControllerError.InvalidUpdateVersion({
          message: `Invalid update version ${u.maxVersionLevel} for feature ${u.feature}. ${why}`
        })
      )
    if (upgradeType < UpgradeType.UPGRADE || upgradeType > UpgradeType.UNSAFE_DOWNGRADE)
      return invalid("The controller does not support the given upgrade type.")
    if (u.maxVersionLevel < 0) return invalid("A feature version cannot be less than 0.")
    const notSupported = reasonNotSupported(
      u.feature,
      u.maxVersionLevel,
      controllerSupported,
      ctx.brokerSupported,
      ctx.controllerId
    )
    if (notSupported !== undefined) return invalid(notSupported)
    const current = level(state, u.feature)
    if (u.maxVersionLevel < current && upgradeType === UpgradeType.UPGRADE)
      return invalid(
        "Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade."
      )
    if (u.maxVersionLevel > current && upgradeType !== UpgradeType.UPGRADE)
      return invalid("Can't downgrade to a newer version.")
    if (u.feature === METADATA_VERSION && u.maxVersionLevel < current)
      // Every step between our metadata versions changed record formats, so no downgrade is lossless.
      return Either.left(
        new ControllerError.InvalidUpdateVersion({
          message: `Unsupported metadata.version downgrade from ${current} to ${u.maxVersionLevel}. ${
            upgradeType === UpgradeType.UNSAFE_DOWNGRADE
              ? "Unsafe metadata downgrade is not supported in this version."
              : "Refusing to perform the requested downgrade because it might delete metadata information."
          }`
        })
      )
    const dependency = dependencyProblem(proposed)
    if (dependency !== undefined) return invalid(dependency)
    records.push(featureLevelRecord(u.feature, u.maxVersionLevel))
  }
  return Either.right(
    request.validateOnly ? ControllerResult.response(undefined) : ControllerResult.of(records, undefined)
  )
}

const featureLevelRecord = (name: string, featureLevel: number) =>
  MetadataRecords.make("FeatureLevelRecord", { name, featureLevel })

const reasonNotSupported = (
  feature: string,
  levelWanted: number,
  controllerSupported: ReadonlyMap<string, VersionRange>,
  brokerSupported: ReadonlyMap<number, ReadonlyMap<string, VersionRange>>,
  controllerId?: number
): string | undefined => {
  const local = controllerSupported.get(feature) ?? DISABLED
  const controller = controllerId === undefined ? "The local controller" : `Local controller ${controllerId}`
  if (!contains(local, levelWanted)) return notIn(controller, local)
  for (const [brokerId, features] of [...brokerSupported].sort(([a], [b]) => a - b)) {
    const range = features.get(feature) ?? DISABLED
    if (!contains(range, levelWanted)) return notIn(`Broker ${brokerId}`, range)
  }
  return undefined
}

/** Kafka's wording for a level outside a node's range; a range of only 0 is a feature it does not know. */
const notIn = (node: string, range: VersionRange): string =>
  range.max === 0
    ? `${node} does not support this feature.`
    : `${node} only supports versions ${range.min}-${range.max}`

/** Feature dependencies over a full proposed set of levels; undefined when they hold. */
const dependencyProblem = (levels: ReadonlyMap<string, number>): string | undefined => {
  const mirror = levels.get(MIRROR_VERSION) ?? 0
  const mv = levels.get(METADATA_VERSION) ?? 0
  if (mirror >= 1 && mv < MIRROR_MIN_METADATA_VERSION)
    return `${MIRROR_VERSION} ${mirror} requires ${METADATA_VERSION} ${MIRROR_MIN_METADATA_VERSION} or higher.`
  return undefined
}

// ---------------------------------------------------------------------------------------------------
// Wire views

/**
 * The feature fields of an ApiVersions response (v3+ tagged fields): the node's supported ranges, every
 * finalized level above 0 (min and max both the level, as Kafka sends them) and the metadata offset they
 * were read at. A v3 request gets no range starting at 0: clients before v4 cannot read one. Driven by
 * the maps given, so a new feature needs only an entry in `SUPPORTED`.
 */
export const apiVersionsFeatures = (
  apiVersion: number,
  finalized: ReadonlyMap<string, number>,
  epoch: bigint,
  supported: ReadonlyMap<string, VersionRange> = SUPPORTED
) => ({
  supportedFeatures: [...supported]
    .filter(([, r]) => apiVersion >= 4 || r.min > 0)
    .map(([name, r]) => ({ name, minVersion: r.min, maxVersion: r.max })),
  finalizedFeaturesEpoch: epoch,
  finalizedFeatures: [...finalized]
    .filter(([, l]) => l > 0)
    .map(([name, l]) => ({ name, maxVersionLevel: l, minVersionLevel: l }))
})

/**
 * A request as it is forwarded in a newer version: v0's AllowDowngrade becomes a safe downgrade, which
 * is what that flag meant, so the controller sees the same intent whatever the client spoke.
 */
export const withUpgradeTypes = (request: UpdateFeatures.Request): UpdateFeatures.Request => ({
  ...request,
  featureUpdates: request.featureUpdates.map((u) =>
    u.allowDowngrade ? { ...u, allowDowngrade: false, upgradeType: UpgradeType.SAFE_DOWNGRADE } : u
  )
})

/**
 * The outcome of a refused UpdateFeatures as Kafka words it: one feature's error fails the whole request.
 */
export const refusal = (
  e: ControllerError.InvalidUpdateVersion | ControllerError.InvalidRequest
): { readonly errorCode: number; readonly errorMessage: string } => ({
  errorCode: e.errorCode,
  errorMessage:
    e._tag === "InvalidUpdateVersion"
      ? `The update failed for all features since the following feature had an error: ${e.message}`
      : e.message
})

/**
 * The UpdateFeatures response for one outcome of the whole request: the top-level error (v2) and, for
 * v0-1 clients, the same error per feature named.
 */
export const updateFeaturesResponse = (
  request: UpdateFeatures.Request,
  error: { readonly errorCode: number; readonly errorMessage: string | null }
): UpdateFeatures.Response => ({
  throttleTimeMs: 0,
  errorCode: error.errorCode,
  errorMessage: error.errorCode === 0 ? null : error.errorMessage,
  results: request.featureUpdates.map((u) => ({
    feature: u.feature,
    errorCode: error.errorCode,
    errorMessage: error.errorCode === 0 ? null : error.errorMessage
  }))
})
