/**
 * @clustermirror/broker-config: A broker's configuration.
 */
export * as BrokerConfig from "./BrokerConfig.js"
export * as DescribeConfigs from "./DescribeConfigs.js"
export * as DynamicBrokerConfig from "./DynamicBrokerConfig.js"
export * as LogConfigs from "./LogConfigs.js"
export * as Jaas from "./Jaas.js"
export * as SaslConfig from "./SaslConfig.js"
export * as ConfigResources from "./ConfigResources.js"
