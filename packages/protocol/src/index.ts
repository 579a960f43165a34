/**
 * @clustermirror/protocol: Kafka's wire protocol, pure (no I/O).
 */
export * as Api from "./Api.js"
export * as Apis from "./Apis.js"
export * as CoordinatorRecord from "./CoordinatorRecord.js"
export * as Crc32c from "./Crc32c.js"
export * as Errors from "./Errors.js"
export * as Header from "./Header.js"
export * as ProtocolError from "./ProtocolError.js"
export * as RecordBatch from "./RecordBatch.js"
export * as Spec from "./Spec.js"
export { Reader, Writer, uuidFromString, uuidToString, ZERO_UUID } from "./internal/Bytes.js"
// APIs (one module each)
export * as ApiVersions from "./apis/ApiVersions.js"
