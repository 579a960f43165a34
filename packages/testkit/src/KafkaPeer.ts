/**
 * Where Apache Kafka's jars come from: `scripts/kafka-peer.sh` resolves `kafka_2.13` and `kafka-tools`
 * (plus a log4j2 binding) from Maven Central into a cached folder, and this module finds that folder and
 * our own log4j2 configuration for the JVMs it is used with. MirrorMaker 2 (`connect-mirror` with
 * `connect-runtime`), Kafka Streams (`kafka-streams` with `kafka-clients` and `rocksdbjni`) and Kafka
 * Connect's runtime alone are resolved the same way into folders of their own.
 *
 * It never builds or patches Kafka; the jars are used exactly as published.
 */
import { execFile } from "node:child_process"
import { existsSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { KafkaLibsError } from "./TestkitError.js"

/** The Kafka release the testkit runs unless `KAFKA_VERSION` or an option says otherwise. */
export const DEFAULT_VERSION = "4.4.0"

/** The resolver script (idempotent; prints the libs folder). */
export const resolverScript: string = fileURLToPath(new URL("../scripts/kafka-peer.sh", import.meta.url))

/** Our log4j2 configuration for Kafka JVMs: WARN and above, on stderr. */
export const log4jConfig: string = fileURLToPath(new URL("../resources/log4j2.properties", import.meta.url))

/** The version to use: the option, else `KAFKA_VERSION`, else `DEFAULT_VERSION`. */
export const version = (requested?: string): string => requested ?? process.env["KAFKA_VERSION"] ?? DEFAULT_VERSION

/**
 * The MirrorMaker 2 release used unless `CONNECT_MIRROR_VERSION` or an option says otherwise: the newest
 * `connect-mirror` published on Maven Central (it is released separately from, and may trail, the broker).
 */
export const DEFAULT_CONNECT_MIRROR_VERSION = "4.3.1"

/** The MirrorMaker 2 version to use: the option, else `CONNECT_MIRROR_VERSION`, else the default. */
export const connectMirrorVersion = (requested?: string): string =>
  requested ?? process.env["CONNECT_MIRROR_VERSION"] ?? DEFAULT_CONNECT_MIRROR_VERSION

const resolved = new Map<string, Promise<string>>()

/** Resolving takes about ten seconds on first use, when Maven downloads the jars. */
const RESOLVE_TIMEOUT_MS = 600_000

/**
 * The folder holding every jar of Apache Kafka `requested` (default: `version()`), resolving it on first
 * use. `CLUSTERMIRROR_KAFKA_LIBS` names a ready folder and skips the resolver.
 */
export const libs = (requested?: string): Promise<string> => {
  const override = process.env["CLUSTERMIRROR_KAFKA_LIBS"]
  if (override !== undefined && override !== "") return Promise.resolve(override)
  return resolve(version(requested), undefined)
}

/**
 * The folder holding MirrorMaker 2's jars (`connect-mirror`, `connect-runtime` and their dependencies) of
 * `requested` (default: `connectMirrorVersion()`), resolving it on first use.
 * `CLUSTERMIRROR_CONNECT_MIRROR_LIBS` names a ready folder and skips the resolver.
 */
export const connectMirrorLibs = (requested?: string): Promise<string> => {
  const override = process.env["CLUSTERMIRROR_CONNECT_MIRROR_LIBS"]
  if (override !== undefined && override !== "") return Promise.resolve(override)
  return resolve(connectMirrorVersion(requested), "connect-mirror")
}

/**
 * The folder holding Kafka Streams' jars (`kafka-streams`, `kafka-clients`, `rocksdbjni` and the rest of
 * their dependencies) of `requested` (default: `version()`), resolving it on first use.
 * `CLUSTERMIRROR_STREAMS_LIBS` names a ready folder and skips the resolver.
 */
export const streamsLibs = (requested?: string): Promise<string> => {
  const override = process.env["CLUSTERMIRROR_STREAMS_LIBS"]
  if (override !== undefined && override !== "") return Promise.resolve(override)
  return resolve(version(requested), "streams")
}

/**
 * The folder holding Kafka Connect's runtime (`connect-runtime` and its dependencies, which include
 * `kafka-clients`, `connect-json` and `connect-transforms`) of `requested` (default: `version()`),
 * resolving it on first use. `CLUSTERMIRROR_CONNECT_LIBS` names a ready folder and skips the resolver.
 */
export const connectLibs = (requested?: string): Promise<string> => {
  const override = process.env["CLUSTERMIRROR_CONNECT_LIBS"]
  if (override !== undefined && override !== "") return Promise.resolve(override)
  return resolve(version(requested), "connect")
}

type Flavour = "connect-mirror" | "streams" | "connect"

const resolve = (v: string, flavour: Flavour | undefined): Promise<string> => {
  const key = flavour === undefined ? v : `${v}-${flavour}`
  let p = resolved.get(key)
  if (p === undefined) {
    p = new Promise<string>((resolve, reject) => {
      execFile(
        "bash",
        flavour === undefined ? [resolverScript, v] : [resolverScript, v, flavour],
        { timeout: RESOLVE_TIMEOUT_MS, maxBuffer: 4 * 1024 * 1024 },
        (error, stdout, stderr) => {
          const dir = stdout.trim().split("\n").pop() ?? ""
          if (error !== null || dir === "" || !existsSync(dir))
            reject(
              new KafkaLibsError({
                version: v,
                message: `resolving Apache Kafka ${key} failed: ${error?.message ?? "no folder printed"}\n${stderr}`
              })
            )
          else resolve(dir)
        }
      )
    })
    // A failure is not cached, so that a later test may retry (for example after the network is back).
    p.catch(() => resolved.delete(key))
    resolved.set(key, p)
  }
  return p
}

/** The `-cp` argument for a libs folder: the JVM expands `dir/*` to every jar in it. */
export const classpath = (libsDir: string): string => `${libsDir}/*`
