/**
 * The ports through which mirror fetchers reach a mirror's source cluster: a `SourceConnector` opens a
 * `SourceConnection` to one source broker (a bootstrap server or a partition leader). The broker adapts its
 * network client (with the mirror's own security settings) to these ports; `MemorySourceCluster` is the
 * in-process implementation for tests. The ports only carry requests: they must not interpret responses,
 * retry, or reconnect (the fetchers back off and the manager opens new connections).
 */
import type { Api, Spec } from "@clustermirror/protocol"

/** One connection to one source broker. */
export interface SourceConnection {
  /** Sends one request at `version` (or the negotiated version when omitted) and resolves with the decoded body. */
  readonly request: <Req extends Spec.Fields, Res extends Spec.Fields>(
    api: Api.ApiDef<Req, Res>,
    body: Spec.StructInput<Req>,
    version?: number
  ) => Promise<Spec.StructType<Res>>
  /** The highest version of `api` both sides support, or undefined when the peer does not support it. */
  // biome-ignore lint/suspicious/noExplicitAny: any API definition, whatever its message fields
  readonly versionFor: (api: Api.ApiDef<any, any>) => number | undefined
  /** Closes the connection; requests in flight and later requests reject. */
  readonly close: () => Promise<void>
}

/** Opens connections to source brokers; rejects when the broker cannot be reached. */
export interface SourceConnector {
  readonly connect: (host: string, port: number) => Promise<SourceConnection>
}

/** A source broker address (a bootstrap server or a broker from source metadata). */
export interface SourceAddress {
  readonly host: string
  readonly port: number
}
