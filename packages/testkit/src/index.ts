/**
 * @clustermirror/testkit: real peers for integration tests and benchmarks (Apache Kafka and its
 * MirrorMaker 2 from Maven Central, Kafka's Java tools, kcat, confluent-kafka from PyPI, our own server as a process) and the
 * mirror verifier. Test support only; never imported by production code.
 */
export * as ApacheKafka from "./ApacheKafka.js"
export * as Certificates from "./Certificates.js"
export * as ConfluentKafka from "./ConfluentKafka.js"
export * as ConsumeTransformProduce from "./ConsumeTransformProduce.js"
export * as CreateTopicNoRetry from "./CreateTopicNoRetry.js"
export * as IsolatedConsumer from "./IsolatedConsumer.js"
export * as JavaTools from "./JavaTools.js"
export * as KafkaConnect from "./KafkaConnect.js"
export * as KafkaPeer from "./KafkaPeer.js"
export * as KafkaStreams from "./KafkaStreams.js"
export * as Kcat from "./Kcat.js"
export * as MirrorCheck from "./MirrorCheck.js"
export * as MirrorMaker from "./MirrorMaker.js"
export * as Ports from "./Ports.js"
export * as ProcessCluster from "./ProcessCluster.js"
export * as ProcStats from "./ProcStats.js"
export * as Properties from "./Properties.js"
export * as ServerProcess from "./ServerProcess.js"
export * as TestkitError from "./TestkitError.js"
export * as TransactionalProducer from "./TransactionalProducer.js"
export * as Wait from "./Wait.js"
