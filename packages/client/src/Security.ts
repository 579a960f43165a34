/**
 * How a client connection secures itself: TLS for `security.protocol` SSL and SASL_SSL, SASL for
 * SASL_PLAINTEXT and SASL_SSL. The same shape serves every connection we open (inter-broker, to the
 * controller, the mirror's to its source, the CLI's), so one parse of Kafka's client configs feeds all.
 */
import type * as tls from "node:tls"

/** The SASL mechanisms a client can authenticate with. */
export type SaslMechanism = "PLAIN" | "SCRAM-SHA-256" | "SCRAM-SHA-512"

export interface SaslCredentials {
  readonly mechanism: SaslMechanism
  readonly username: string
  /** Never logged or returned: holders must not put it in messages. */
  readonly password: string
}

export interface ClientSecurity {
  /** Connect with TLS using these options (`servername` for SNI and hostname checks). Absent: plain TCP. */
  readonly tls?: tls.ConnectionOptions
  /** Authenticate with SASL after connecting. Absent: no SASL. */
  readonly sasl?: SaslCredentials
}
