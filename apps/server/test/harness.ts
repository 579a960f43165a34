/**
 * The server's integration-test setup over the shared testkit: our server as a process with the test
 * broker defaults (`ServerProcess.TEST_DEFAULTS`) under each test's own settings, plus a kafkajs client
 * pointed at it. Process control, kcat, RSS sampling, free ports and polling live in the testkit.
 *
 * It adds no process or file handling of its own.
 */
import { Properties, ServerProcess } from "@clustermirror/testkit"
import { Kafka, logLevel } from "kafkajs"

export interface ServerOptions {
  /** Broker/topic settings written to the `--config` properties file, over the test defaults. */
  readonly config?: Properties.Properties
  /** Reuse an existing data dir (it is then not removed by `stop()`). */
  readonly dataDir?: string
}

export interface ServerHandle extends ServerProcess.ServerHandle {
  /** A kafkajs client for this server with logging off. */
  kafka(clientId?: string): Kafka
}

/** Starts a server process on a free port and resolves once it is listening. */
export const startServer = async (opts: ServerOptions = {}): Promise<ServerHandle> => {
  const server = await ServerProcess.start({
    config: Properties.merge(ServerProcess.TEST_DEFAULTS, opts.config),
    tempPrefix: "clustermirror-int-",
    ...(opts.dataDir === undefined ? {} : { dataDir: opts.dataDir })
  })
  // Extends the handle in place: its `pid` is a getter that follows restarts, which a copy would freeze.
  return Object.assign(server, {
    kafka: (clientId = "clustermirror-int") =>
      new Kafka({
        clientId,
        brokers: [server.bootstrap],
        logLevel: logLevel.NOTHING,
        connectionTimeout: 10_000,
        requestTimeout: 60_000
      })
  })
}

/** Peak RSS budget for the server across the integration tests. */
export const PEAK_RSS_LIMIT_MB = 300
