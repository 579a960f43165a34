/**
 * @clustermirror/network: The network layer of every node.
 */
export * as Channel from "./Channel.js"
export * as ControllerChannel from "./ControllerChannel.js"
export * as RateLimitedLog from "./RateLimitedLog.js"
export * as RequestChannel from "./RequestChannel.js"
export * as SocketServer from "./SocketServer.js"
export * as SaslAuthenticator from "./SaslAuthenticator.js"
