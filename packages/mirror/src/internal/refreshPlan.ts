/**
 * The decisions of one periodic mirror refresh (KIP-1279 §5.9, §5.3, §6.5) as pure functions over what
 * the destination's metadata image and the source's metadata say: the refresh interval in effect, the
 * mirror's topic patterns, the verdict on each mirrored topic (still there, grown, deleted, recreated),
 * the topics pattern discovery starts, the topics exclude enforcement stops, and the periodic epoch bumps.
 *
 * No I/O and no clocks: `MirrorRefresh` asks the clusters, calls these, and acts on the answers.
 */
import { ConfigurationControl, MirrorPatterns } from "@clustermirror/controller"
import { MirrorMetadataManager } from "@clustermirror/coordinator"
import { Uuid } from "@clustermirror/protocol"

const { LEADER_EPOCH_BUMP_INCREMENT, LEADER_EPOCH_BUMP_THRESHOLD } = MirrorMetadataManager

export const REFRESH_INTERVAL_KEY = "mirror.metadata.refresh.interval.ms"

const parseInterval = (v: string | undefined): number | undefined => {
  if (v === undefined || v.trim() === "") return undefined
  const n = Number(v)
  return Number.isFinite(n) && n >= 0 ? n : undefined
}

/**
 * The refresh interval of a mirror in ms (0: disabled): the mirror's own
 * `mirror.metadata.refresh.interval.ms` when set, else the broker's dynamic value (this broker's, then
 * the cluster default), else the broker's static config.
 */
export const refreshIntervalMs = (
  mirrorConfigs: ReadonlyMap<string, string>,
  brokerDynamic: ReadonlyArray<ReadonlyMap<string, string>>,
  staticMs: number
): number => {
  const own = parseInterval(mirrorConfigs.get(REFRESH_INTERVAL_KEY))
  if (own !== undefined) return own
  for (const c of brokerDynamic) {
    const v = parseInterval(c.get(REFRESH_INTERVAL_KEY))
    if (v !== undefined) return v
  }
  return staticMs
}

/** A mirror's compiled topic lists (§5.3); exclude wins. `hasInclude` false: nothing to discover. */
export interface TopicPatterns {
  readonly hasInclude: boolean
  readonly include: MirrorPatterns.Matcher
  readonly exclude: MirrorPatterns.Matcher
}

/**
 * The lists in effect (stored, else the defaults of §7.3: include empty, exclude `__.*`); a stored
 * pattern that does not compile matches nothing (the controller refuses such patterns on write).
 */
export const topicPatterns = (configs: ReadonlyMap<string, string>): TopicPatterns => {
  const list = (key: string) =>
    MirrorPatterns.parse(configs.get(key) ?? ConfigurationControl.MIRROR_CONFIG_DEFS.get(key)?.default ?? "")
  const include = list(MirrorPatterns.INCLUDE)
  const exclude = list(MirrorPatterns.EXCLUDE)
  const none = () => false
  const inc = MirrorPatterns.compile(include)
  const exc = MirrorPatterns.compile(exclude)
  return {
    hasInclude: include.length > 0,
    include: inc._tag === "Right" ? inc.right : none,
    exclude: exc._tag === "Right" ? exc.right : none
  }
}

/** Whether a source topic name is mirrored by these lists. */
export const selected = (patterns: TopicPatterns, name: string): boolean =>
  patterns.include(name) && !patterns.exclude(name)

/** A source topic as its Metadata describes it. */
export interface SourceTopic {
  readonly name: string
  readonly topicId: string
  readonly isInternal: boolean
  /** Partition index → its leader and leader epoch (-1 leader: none). */
  readonly partitions: ReadonlyMap<number, { readonly leader: number; readonly leaderEpoch: number }>
}

/** A mirror topic on the destination. */
export interface DestinationTopic {
  readonly name: string
  readonly topicId: string
  readonly partitions: number
}

/** What the source says about one mirrored topic. */
export type TopicVerdict =
  /** The source no longer lists it (to be confirmed by a full listing before failing). */
  | { readonly _tag: "Missing" }
  /** The name is there under another topic id: a new topic, not the one mirrored. */
  | { readonly _tag: "Recreated"; readonly sourceTopicId: string }
  /** The same topic; `grow` is its partition count on the source when above the destination's, else null. */
  | { readonly _tag: "Present"; readonly grow: number | null }

/**
 * The verdict on a destination topic given the source's description of its name (undefined: not
 * described). A source without topic ids (the zero id) cannot tell a recreated topic apart.
 */
export const topicVerdict = (destination: DestinationTopic, source: SourceTopic | undefined): TopicVerdict => {
  if (source === undefined) return { _tag: "Missing" }
  if (source.topicId !== Uuid.ZERO && source.topicId !== destination.topicId)
    return { _tag: "Recreated", sourceTopicId: source.topicId }
  return { _tag: "Present", grow: source.partitions.size > destination.partitions ? source.partitions.size : null }
}

/** A topic pattern discovery starts: StartMirrorTopics with its source id and partition count (JR31.1, JR48). */
export interface Discovered {
  readonly topicName: string
  readonly topicId: string
  readonly numPartitions: number
}

/** A source topic discovery leaves alone because the destination has the name under another id. */
export interface Conflict {
  readonly topicName: string
  readonly sourceTopicId: string
  readonly destinationTopicId: string
}

/**
 * Pattern discovery (§5.9 2c, JR31.1): source topics the lists select that are not already topics of
 * this mirror (in any state), sorted by name. A destination topic of the same name that is not this
 * mirror's: with the same id it is started (the controller decides whether it may join), with another
 * id it is a conflict the operator resolves (§5.2). Internal topics and topics without partitions are
 * never started.
 */
export const discover = (
  mirror: string,
  patterns: TopicPatterns,
  source: ReadonlyArray<SourceTopic>,
  destination: (name: string) => { readonly topicId: string; readonly mirrorName: string | null } | undefined
): { readonly start: ReadonlyArray<Discovered>; readonly conflicts: ReadonlyArray<Conflict> } => {
  const start: Array<Discovered> = []
  const conflicts: Array<Conflict> = []
  if (!patterns.hasInclude) return { start, conflicts }
  for (const t of [...source].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    if (t.isInternal || t.partitions.size === 0 || !selected(patterns, t.name)) continue
    const here = destination(t.name)
    if (here !== undefined && here.mirrorName === mirror) continue
    if (here !== undefined && t.topicId !== Uuid.ZERO && here.topicId !== t.topicId) {
      conflicts.push({ topicName: t.name, sourceTopicId: t.topicId, destinationTopicId: here.topicId })
      continue
    }
    start.push({ topicName: t.name, topicId: t.topicId, numPartitions: t.partitions.size })
  }
  return { start, conflicts }
}

/**
 * Exclude enforcement (§5.3): the mirror's active topics (desired MIRRORING) whose names the exclude
 * list now matches, sorted; they get StopMirrorTopics.
 */
export const excluded = (
  patterns: TopicPatterns,
  topics: ReadonlyArray<{ readonly name: string; readonly desiredState: string }>
): ReadonlyArray<string> =>
  topics
    .filter((t) => t.desiredState === "MIRRORING" && patterns.exclude(t.name))
    .map((t) => t.name)
    .sort()

/** A partition whose destination leader epoch must rise (BumpLeaderEpochs' MinLeaderEpoch). */
export interface Bump {
  readonly topicId: string
  readonly partition: number
  readonly minLeaderEpoch: number
}

/**
 * The periodic bump of §6.5: for each partition whose source leader epoch S is above the destination's
 * epoch minus the threshold, MinLeaderEpoch = S + increment, so the destination epoch stays ahead of
 * the source's (DLE ≥ SLE). Partitions without a known epoch on either side are left alone.
 */
export const epochBumps = (
  partitions: ReadonlyArray<{
    readonly topicId: string
    readonly partition: number
    readonly destinationEpoch: number
    readonly sourceEpoch: number
  }>
): ReadonlyArray<Bump> =>
  partitions
    .filter(
      (p) =>
        p.sourceEpoch >= 0 &&
        p.destinationEpoch >= 0 &&
        p.sourceEpoch > p.destinationEpoch - LEADER_EPOCH_BUMP_THRESHOLD
    )
    .map((p) => ({
      topicId: p.topicId,
      partition: p.partition,
      minLeaderEpoch: p.sourceEpoch + LEADER_EPOCH_BUMP_INCREMENT
    }))
