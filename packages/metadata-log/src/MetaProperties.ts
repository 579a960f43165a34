/**
 * The `meta.properties` of a metadata log directory, in Kafka's format (`version`, `cluster.id`,
 * `node.id`, `directory.id`): the directory's id is a Uuid made the first time the directory is used and
 * kept from then on, so that the replica of the metadata log in it keeps one identity across restarts
 * (DescribeQuorum's `ReplicaDirectoryId`). Only file I/O on that one file; it decides nothing else.
 */
import { Uuid } from "@clustermirror/protocol"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"
import { MetaPropertiesError } from "./MetadataLogError.js"

export const FILE_NAME = "meta.properties"

export interface MetaProperties {
  readonly clusterId: string
  readonly nodeId: number
  /** `directory.id`: the directory's own Uuid (Kafka's base64 form). */
  readonly directoryId: Uuid.Uuid
}

/** The `key=value` lines of a properties text (comments and blank lines skipped). */
export const parse = (text: string): ReadonlyMap<string, string> =>
  new Map(
    text
      .split("\n")
      .map((l) => l.trim())
      .filter((l) => l !== "" && !l.startsWith("#") && l.includes("="))
      .map((l) => [l.slice(0, l.indexOf("=")).trim(), l.slice(l.indexOf("=") + 1).trim()] as const)
  )

/** The file's text for `props`, in Kafka's key order. */
export const format = (props: MetaProperties): string =>
  `version=1\ncluster.id=${props.clusterId}\nnode.id=${props.nodeId}\ndirectory.id=${props.directoryId}\n`

/**
 * The `meta.properties` of `dir` for this cluster and node: read when it exists (one without a
 * `directory.id` gets one, written back), else created with a new directory id. A file naming another
 * cluster or node, or a `directory.id` that is not a Uuid, fails.
 */
export const loadOrCreate = (
  dir: string,
  clusterId: string,
  nodeId: number
): Effect.Effect<MetaProperties, MetaPropertiesError> =>
  Effect.gen(function* () {
    const file = path.join(dir, FILE_NAME)
    const io = <A>(f: () => A) =>
      Effect.try({ try: f, catch: (cause) => new MetaPropertiesError({ message: `${file}: ${String(cause)}`, cause }) })
    const stored = yield* io(() =>
      fs.existsSync(file) ? parse(fs.readFileSync(file, "utf8")) : new Map<string, string>()
    )
    const storedCluster = stored.get("cluster.id")
    if (storedCluster !== undefined && storedCluster !== clusterId)
      return yield* new MetaPropertiesError({ message: `${file} has cluster.id ${storedCluster}, not ${clusterId}` })
    const storedNode = stored.get("node.id")
    if (storedNode !== undefined && storedNode !== String(nodeId))
      return yield* new MetaPropertiesError({ message: `${file} has node.id ${storedNode}, not ${nodeId}` })
    const storedDirectory = stored.get("directory.id")
    if (storedDirectory !== undefined && (!Uuid.isValid(storedDirectory) || Uuid.RESERVED.has(storedDirectory)))
      return yield* new MetaPropertiesError({ message: `${file} has an invalid directory.id ${storedDirectory}` })
    const props: MetaProperties = { clusterId, nodeId, directoryId: storedDirectory ?? Uuid.random() }
    if (storedDirectory === undefined)
      yield* io(() => {
        fs.mkdirSync(dir, { recursive: true })
        const tmp = `${file}.tmp`
        fs.writeFileSync(tmp, format(props))
        fs.renameSync(tmp, file)
      })
    return props
  })
