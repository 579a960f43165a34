/**
 * A node's listeners at run time: the socket options of each listener (TLS from its `ssl.*` settings,
 * the principal mapping of `ssl.principal.mapping.rules`, SASL from its mechanisms and JAAS entries),
 * the client security the node uses for its own connections to a listener of another node (replica
 * fetchers, coordinators, the controller, the mirrors' destination admin: TLS, and SASL with the
 * inter-broker, controller or mirror admin mechanism and the credentials of the listener's JAAS entry), and
 * Kafka's security protocol ids as RegisterBrokerRecord carries them. Key and trust files are read when
 * these are built, at start: a missing file fails the start.
 */
import type { BrokerConfig } from "@clustermirror/broker-config/BrokerConfig"
import * as PrincipalMapping from "@clustermirror/broker-config/PrincipalMapping"
import * as SaslConfig from "@clustermirror/broker-config/SaslConfig"
import * as SslConfig from "@clustermirror/broker-config/SslConfig"
import type { Security } from "@clustermirror/client"
import * as SaslAuthenticator from "@clustermirror/network/SaslAuthenticator"
import * as SocketServer from "@clustermirror/network/SocketServer"
import type { Scram } from "@clustermirror/protocol"

/** Kafka's `SecurityProtocol` ids (BrokerRegistration and RegisterBrokerRecord endpoints). */
export const SECURITY_PROTOCOL_ID: Readonly<Record<SocketServer.SecurityProtocol, number>> = {
  PLAINTEXT: 0,
  SSL: 1,
  SASL_PLAINTEXT: 2,
  SASL_SSL: 3
}

const settingsOf = (config: BrokerConfig, name: string): SslConfig.SslSettings => {
  const s = config.ssl.get(name)
  if (s === undefined) throw new Error(`listener ${name} uses TLS but has no ssl settings`)
  return s
}

const tlsProtocol = (p: SocketServer.SecurityProtocol): boolean => p === "SSL" || p === "SASL_SSL"
const saslProtocol = (p: SocketServer.SecurityProtocol): boolean => p === "SASL_PLAINTEXT" || p === "SASL_SSL"

/**
 * What makes a listener speak its protocol: the `SocketServer` options (name, protocol, TLS) and, for
 * SASL_PLAINTEXT and SASL_SSL, the SASL settings its server wraps the request handler with.
 */
export type ListenerOptions = Pick<SocketServer.SocketServerOptions, "listenerName" | "securityProtocol" | "tls"> & {
  readonly sasl?: SaslConfig.ListenerSasl
}

/** The options that make a listener speak its protocol. */
export const socketOptions = (
  config: BrokerConfig,
  listener: { readonly name: string; readonly securityProtocol: SocketServer.SecurityProtocol }
): ListenerOptions => {
  const sasl = saslProtocol(listener.securityProtocol) ? { sasl: SaslConfig.forListener(config, listener.name) } : {}
  if (!tlsProtocol(listener.securityProtocol))
    return { listenerName: listener.name, securityProtocol: listener.securityProtocol, ...sasl }
  const settings = settingsOf(config, listener.name)
  return {
    listenerName: listener.name,
    securityProtocol: listener.securityProtocol,
    tls: {
      options: SslConfig.serverOptions(settings),
      principalOf: (subject) => PrincipalMapping.apply(settings.principalMappingRules, subject)
    },
    ...sasl
  }
}

/**
 * The security of this node's connections to a listener named `name` speaking `protocol` on another
 * node: its own ssl settings for that listener name as client configs (truststore, keystore for mutual
 * TLS, host name check), and for SASL the mechanism of `mechanismKey` with the username and password of
 * the listener's JAAS entry for it. Undefined for PLAINTEXT.
 */
export const clientSecurity = (
  config: BrokerConfig,
  name: string,
  protocol: SocketServer.SecurityProtocol,
  mechanismKey: SaslConfig.MechanismKey
): Security.ClientSecurity | undefined => {
  if (!tlsProtocol(protocol) && !saslProtocol(protocol)) return undefined
  return {
    ...(tlsProtocol(protocol) ? { tls: SslConfig.clientOptions(settingsOf(config, name)) } : {}),
    ...(saslProtocol(protocol) ? { sasl: SaslConfig.clientCredentials(config, name, mechanismKey) } : {})
  }
}

/**
 * Starts the socket server of one listener: its TLS settings, and, when it takes SASL, the handler behind
 * the SASL authenticator (credentials of PLAIN from the listener's JAAS entry, of SCRAM from `scram`).
 */
export const serve = (
  handler: SocketServer.FrameHandler,
  listener: Omit<SocketServer.SocketServerOptions, "handle"> & ListenerOptions,
  scram: (username: string, mechanism: Scram.Mechanism) => Scram.Credential | undefined
): Promise<SocketServer.SocketServer> => {
  const { sasl, ...options } = listener
  return SocketServer.start({
    ...options,
    handle:
      sasl === undefined
        ? handler
        : SaslAuthenticator.wrap(handler, {
            enabledMechanisms: sasl.enabledMechanisms,
            plainPassword: (u) => sasl.plainUsers.get(u),
            scramCredential: scram,
            maxReauthMs: sasl.maxReauthMs,
            ...(options.log === undefined ? {} : { log: options.log })
          })
  })
}
