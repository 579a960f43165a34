/**
 * Our own small Java peers compiled with `javac` against the resolved Kafka jars, each folder a source set
 * of its own: the client peers (`packages/testkit/java/*.java`, against Kafka's client API), the Streams
 * peers (`packages/testkit/java/streams/*.java`, against the Kafka Streams jars) and the Kafka Connect
 * plugins (`packages/testkit/java/connect/`, against Connect's API, with their `META-INF` service files).
 * The classes are cached next to the jars (or in the user's
 * cache when that folder is read-only), in a folder named after a hash of the sources, so a changed
 * source compiles again and an unchanged one never does.
 *
 * It compiles into a private folder and renames it into place, so concurrent test files never see
 * half-written classes.
 */
import { createHash } from "node:crypto"
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync } from "node:fs"
import { homedir } from "node:os"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import * as KafkaPeer from "../KafkaPeer.js"
import { PeerStartError } from "../TestkitError.js"
import * as Process from "./Process.js"

/** The folder of the client peers' Java sources. */
export const sourceDir: string = fileURLToPath(new URL("../../java/", import.meta.url))

/** The folder of the Streams peers' Java sources (compiled against `KafkaPeer.streamsLibs()`). */
export const streamsSourceDir: string = fileURLToPath(new URL("../../java/streams/", import.meta.url))

/** The folder of the Kafka Connect plugins (compiled against Connect's jars). */
export const connectSourceDir: string = fileURLToPath(new URL("../../java/connect/", import.meta.url))

const COMPILE_TIMEOUT_MS = 120_000

const compiled = new Map<string, Promise<string>>()

/** The classes folder of `sources` for `libs` (compiling on first use) and the classpath that runs them. */
export const classpath = async (libs: string, sources: string = sourceDir): Promise<string> =>
  `${await classesFor(libs, sources)}:${KafkaPeer.classpath(libs)}`

export interface JavaOptions {
  /** The source set holding `mainClass` (default `sourceDir`). */
  readonly sources?: string
  /** `-Xmx` (default `128m`). */
  readonly heap?: string
}

/** The `java` arguments that run `mainClass` of our peers: a small client JVM, Kafka's logging quiet. */
export const javaArgs = async (libs: string, mainClass: string, opts: JavaOptions = {}): Promise<Array<string>> => [
  `-Xmx${opts.heap ?? "128m"}`,
  "-XX:TieredStopAtLevel=1",
  "-XX:+UseSerialGC",
  "-Xshare:auto",
  `-Dlog4j2.configurationFile=${KafkaPeer.log4jConfig}`,
  "-cp",
  await classpath(libs, opts.sources),
  mainClass
]

const classesFor = (libs: string, sources: string): Promise<string> => {
  const key = `${sources}\0${libs}`
  let p = compiled.get(key)
  if (p === undefined) {
    p = compile(libs, sources)
    p.catch(() => compiled.delete(key))
    compiled.set(key, p)
  }
  return p
}

/** The files under `dir` (relative paths, sorted), for hashing resources. */
const filesUnder = (dir: string, prefix = ""): Array<string> =>
  existsSync(dir)
    ? readdirSync(dir, { withFileTypes: true })
        .sort((a, b) => (a.name < b.name ? -1 : 1))
        .flatMap((e) =>
          e.isDirectory() ? filesUnder(join(dir, e.name), `${prefix}${e.name}/`) : [`${prefix}${e.name}`]
        )
    : []

/**
 * Where the classes for `libs` live: next to the jars, or, when that folder is not writable (a libs folder
 * given by `CLUSTERMIRROR_KAFKA_LIBS`), in the user's cache under a name that also depends on the libs path.
 * `work` is a fresh folder to compile into, undefined when the classes are already there.
 */
const placeFor = (libs: string, name: string): { target: string; work: string | undefined } => {
  const nextToJars = join(dirname(libs), name)
  if (existsSync(nextToJars)) return { target: nextToJars, work: undefined }
  try {
    return { target: nextToJars, work: mkdtempSync(`${nextToJars}.tmp-`) }
  } catch {
    const suffix = createHash("sha256").update(libs).digest("hex").slice(0, 8)
    const cache = join(homedir(), ".cache", "clustermirror")
    mkdirSync(cache, { recursive: true })
    const target = join(cache, `${name}-${suffix}`)
    return existsSync(target) ? { target, work: undefined } : { target, work: mkdtempSync(`${target}.tmp-`) }
  }
}

const compile = async (libs: string, from: string): Promise<string> => {
  const sources = readdirSync(from)
    .filter((n) => n.endsWith(".java"))
    .sort()
  const resources = filesUnder(join(from, "META-INF"), "META-INF/")
  const hash = createHash("sha256")
  for (const s of [...sources, ...resources]) hash.update(s).update(readFileSync(join(from, s)))
  const name = `testkit-classes-${hash.digest("hex").slice(0, 16)}`
  const { target, work } = placeFor(libs, name)
  if (work === undefined) return target
  try {
    const r = await Process.run(
      "javac",
      ["-nowarn", "-d", work, "-cp", KafkaPeer.classpath(libs), ...sources.map((s) => join(from, s))],
      { timeoutMs: COMPILE_TIMEOUT_MS }
    )
    if (r.code !== 0)
      throw new PeerStartError({
        peer: "javac",
        output: r.stdout + r.stderr,
        message: `compiling the testkit's Java peers failed (exit ${r.code ?? r.signal}):\n${r.stdout}${r.stderr}`
      })
    if (resources.length > 0) cpSync(join(from, "META-INF"), join(work, "META-INF"), { recursive: true })
    try {
      renameSync(work, target)
    } catch (e) {
      // Another compile won the race; its classes are the same.
      if (!existsSync(target)) throw e
    }
    return target
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
}
