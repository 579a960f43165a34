/**
 * The KIP-1279 requests a broker answers from its own metadata image: ListClusterMirrors (98), and the
 * CLUSTER_MIRROR (64) config resource of DescribeConfigs. Mirrors are the config resources of type 64;
 * a topic belongs to a mirror through its `mirrorName` and desired state. Reads only: the decisions
 * about mirrors are the controller's, and this module must not forward or change anything.
 */
import { ConfigurationControl } from "@clustermirror/controller"
import { MetadataImage } from "@clustermirror/metadata-log"
import { Errors, ListClusterMirrors } from "@clustermirror/protocol"
import type { Handlers } from "@clustermirror/network/RequestChannel"

/** Kafka's DescribeConfigs ConfigSource and ConfigType numbers used for mirror entries. */
const DYNAMIC_BROKER_CONFIG = 2
const CONFIG_TYPE_STRING = 2

export interface ListedMirror {
  readonly mirrorName: string
  readonly sourceBootstrap: string
  readonly sourceClusterId: string
  readonly topicCount: number
  readonly topicNames: ReadonlyArray<string>
}

/** The mirrors of an image, sorted by name, as ListClusterMirrors reports them (§2.8). */
export const listMirrors = (
  image: MetadataImage.MetadataImage,
  includeTopicNames: boolean
): ReadonlyArray<ListedMirror> => {
  const mirrors = new Map<string, { mirroring: number; names: Array<string> }>()
  for (const c of image.configs.values())
    if (c.type === MetadataImage.ConfigResourceType.CLUSTER_MIRROR) mirrors.set(c.name, { mirroring: 0, names: [] })
  for (const t of image.topics.byId.values()) {
    if (t.mirrorName === null) continue
    const m = mirrors.get(t.mirrorName)
    if (m === undefined) continue
    if (t.desiredMirrorState === "MIRRORING") m.mirroring++
    if (t.desiredMirrorState === "MIRRORING" || t.desiredMirrorState === "PAUSED") m.names.push(t.name)
  }
  return [...mirrors.entries()]
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .map(([name, m]) => {
      const configs = MetadataImage.configsOf(image, MetadataImage.ConfigResourceType.CLUSTER_MIRROR, name)
      return {
        mirrorName: name,
        sourceBootstrap: configs.get("bootstrap.servers") ?? "",
        sourceClusterId: configs.get("mirror.source.cluster.id") ?? "",
        topicCount: m.mirroring,
        topicNames: includeTopicNames ? m.names.sort() : []
      }
    })
}

/**
 * DescribeConfigs of one mirror: its stored entries as STRING from DYNAMIC_BROKER_CONFIG, except that
 * password-type values never leave the broker (null, marked sensitive).
 */
export const describeMirrorConfigs = (
  image: MetadataImage.MetadataImage,
  name: string,
  keys: ReadonlyArray<string> | null
) => {
  const base = { resourceType: MetadataImage.ConfigResourceType.CLUSTER_MIRROR, resourceName: name }
  const stored = MetadataImage.configsOf(image, MetadataImage.ConfigResourceType.CLUSTER_MIRROR, name)
  if (stored.size === 0)
    return {
      ...base,
      errorCode: Errors.ErrorCode.UNKNOWN_CLUSTER_MIRROR,
      errorMessage: `Cluster mirror ${name} does not exist`,
      configs: []
    }
  const configs = [...stored]
    .filter(([key]) => keys === null || keys.includes(key))
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))
    .map(([key, value]) => {
      const secret = ConfigurationControl.isSensitive(ConfigurationControl.ResourceType.CLUSTER_MIRROR, key)
      return {
        name: key,
        value: secret ? null : value,
        readOnly: false,
        configSource: DYNAMIC_BROKER_CONFIG,
        isDefault: false,
        isSensitive: secret,
        synonyms: [],
        configType: CONFIG_TYPE_STRING
      }
    })
  return { ...base, errorCode: 0, errorMessage: null, configs }
}

/** Registers ListClusterMirrors, answered from the image `current` returns at each request. */
export const register = (handlers: Handlers, current: () => MetadataImage.MetadataImage): Handlers =>
  handlers.register(ListClusterMirrors.api, (_req, request) => ({
    throttleTimeMs: 0,
    errorCode: 0,
    errorMessage: null,
    mirrors: listMirrors(current(), request.includeTopicNames)
  }))
