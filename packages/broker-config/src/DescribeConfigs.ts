/**
 * DescribeConfigs answers for the resources a broker describes from its own layers: a topic (its dynamic
 * configs over the broker's defaults) and this broker. Other resource types (cluster mirrors) are the
 * caller's; an unknown one is INVALID_REQUEST, as Kafka answers.
 */
import { ConfigurationControl } from "@clustermirror/controller"
import { Errors } from "@clustermirror/protocol"
import * as DynamicBrokerConfig from "./DynamicBrokerConfig.js"
import * as LogConfigs from "./LogConfigs.js"

export interface Described {
  readonly resourceType: number
  readonly resourceName: string
  readonly errorCode: number
  readonly errorMessage: string | null
  readonly configs: ReadonlyArray<DynamicBrokerConfig.DescribedConfig>
}

export interface Resource {
  readonly resourceType: number
  readonly resourceName: string
  /** null: every key. */
  readonly keys: ReadonlyArray<string> | null
  readonly includeSynonyms: boolean
}

/** A topic's or this broker's configs; `undefined` for a resource type the caller answers (or refuses). */
export const describe = (
  layers: DynamicBrokerConfig.Layers,
  topicConfigs: (topic: string) => ReadonlyMap<string, string> | undefined,
  r: Resource
): Described | undefined => {
  const base = { resourceType: r.resourceType, resourceName: r.resourceName, errorMessage: null }
  const pick = <T extends { name: string }>(xs: ReadonlyArray<T>) =>
    r.keys === null ? [...xs] : xs.filter((x) => r.keys!.includes(x.name))
  const failed = (errorCode: number, errorMessage: string): Described => ({
    ...base,
    errorCode,
    errorMessage,
    configs: []
  })
  if (r.resourceType === ConfigurationControl.ResourceType.TOPIC) {
    const configs = topicConfigs(r.resourceName)
    if (configs === undefined)
      return failed(Errors.ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `Topic ${r.resourceName} does not exist`)
    return { ...base, errorCode: 0, configs: pick(LogConfigs.describeTopic(layers, configs, r.includeSynonyms)) }
  }
  if (r.resourceType === ConfigurationControl.ResourceType.BROKER) {
    if (r.resourceName !== "" && r.resourceName !== String(layers.config.nodeId))
      return failed(Errors.ErrorCode.INVALID_REQUEST, `Unexpected broker id ${r.resourceName}`)
    return {
      ...base,
      errorCode: 0,
      configs: pick(DynamicBrokerConfig.describeBroker(layers, r.resourceName, r.includeSynonyms))
    }
  }
  return undefined
}

/** The answer for a resource type nobody describes. */
export const unsupported = (r: Resource): Described => ({
  resourceType: r.resourceType,
  resourceName: r.resourceName,
  errorCode: Errors.ErrorCode.INVALID_REQUEST,
  errorMessage: `Unsupported resource type ${r.resourceType}`,
  configs: []
})

/**
 * A DescribeConfigs resource of any type: a topic's or this broker's configs, a KIP-1279 cluster mirror's
 * through `mirror` (where the metadata holds mirrors), anything else unsupported.
 */
export const describeAny = <M>(
  layers: DynamicBrokerConfig.Layers,
  topicConfigs: (topic: string) => ReadonlyMap<string, string> | undefined,
  mirror: ((name: string, keys: ReadonlyArray<string> | null) => M) | undefined,
  r: Resource
): Described | M =>
  describe(layers, topicConfigs, r) ??
  (r.resourceType === ConfigurationControl.ResourceType.CLUSTER_MIRROR && mirror !== undefined
    ? mirror(r.resourceName, r.keys)
    : unsupported(r))
