/**
 * ListConfigResources (74): the config resources of the requested types, listed from the broker's
 * metadata image. v0 (ListClientMetricsResources) lists client metrics resources only; v1 with no types
 * lists every type below. Topics are every topic, brokers (and broker loggers) every registered broker, groups the groups with
 * a dynamic config; client metrics resources are never created (IncrementalAlterConfigs refuses them), so
 * none are listed. A type outside these answers UNSUPPORTED_VERSION, as Kafka does.
 */
import type { MetadataImage } from "@clustermirror/metadata-log"
import { Errors, type ListConfigResources } from "@clustermirror/protocol"

/** Kafka's config resource types that ListConfigResources lists. */
export const ListedType = { TOPIC: 2, BROKER: 4, BROKER_LOGGER: 8, CLIENT_METRICS: 16, GROUP: 32 } as const

const LISTED: ReadonlyArray<number> = [
  ListedType.TOPIC,
  ListedType.BROKER,
  ListedType.BROKER_LOGGER,
  ListedType.CLIENT_METRICS,
  ListedType.GROUP
]

/** The names of `type`'s resources, sorted. */
const names = (image: MetadataImage.MetadataImage, type: number): ReadonlyArray<string> => {
  switch (type) {
    case ListedType.TOPIC:
      return [...image.topics.byName.keys()].sort()
    case ListedType.BROKER:
    case ListedType.BROKER_LOGGER:
      return [...image.cluster.brokers.keys()].sort((a, b) => a - b).map(String)
    default:
      return [...image.configs.values()]
        .filter((r) => r.type === type)
        .map((r) => r.name)
        .sort()
  }
}

export const list = (
  image: MetadataImage.MetadataImage,
  version: number,
  request: ListConfigResources.Request
): ListConfigResources.Response => {
  const types =
    version === 0 ? [ListedType.CLIENT_METRICS] : request.resourceTypes.length === 0 ? LISTED : request.resourceTypes
  if (types.some((t) => !LISTED.includes(t)))
    return { throttleTimeMs: 0, errorCode: Errors.ErrorCode.UNSUPPORTED_VERSION, configResources: [] }
  return {
    throttleTimeMs: 0,
    errorCode: 0,
    configResources: [...new Set(types)].flatMap((resourceType) =>
      names(image, resourceType).map((resourceName) => ({ resourceName, resourceType }))
    )
  }
}
