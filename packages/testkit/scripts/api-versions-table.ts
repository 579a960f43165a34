/**
 * Prints the README's "Kafka APIs" table: starts Apache Kafka 4.4 (one combined node) and our `--embedded 3`
 * server, runs `kafka-broker-api-versions` against both and lists every API key Kafka serves with its
 * versions and ours (or how we refuse it), then the KIP-1279 keys we serve that Kafka does not.
 * Run: `node scripts/api-versions-table.mjs` from the repository root.
 */
import { ApacheKafka, JavaTools, Ports, ServerProcess } from "../src/index.js"

const MAIN = "org.apache.kafka.tools.BrokerApiVersionsCommand"

/** How we answer the Kafka APIs we do not advertise, or refuse in every response. */
const NOTES: Readonly<Record<number, string>> = {
  38: "refused: DELEGATION_TOKEN_REQUEST_NOT_ALLOWED (64) on PLAINTEXT/1-way SSL, else DELEGATION_TOKEN_AUTH_DISABLED (61), as Kafka without `delegation.token.secret.key`",
  39: "refused as CreateDelegationToken",
  40: "refused as CreateDelegationToken",
  41: "refused as CreateDelegationToken",
  48: "quotas from the broker's metadata image, with Kafka's filters (EXACT / DEFAULT / SPECIFIED, `strict`)",
  49: "forwarded to the controller, stored in the metadata log (ClientQuotaRecord); every Kafka quota key is enforced by the brokers: `producer_byte_rate`, `consumer_byte_rate`, `request_percentage`, `controller_mutation_rate` (THROTTLING_QUOTA_EXCEEDED (89) from CreateTopics v6, CreatePartitions v3, DeleteTopics v5), `connection_creation_rate` for IPs",
  76: "not advertised (share groups: `kafka-share-groups --describe` prints UnsupportedVersionException)",
  88: "not advertised (streams groups: `kafka-streams-groups --describe` prints UnsupportedVersionException)",
  80: "not advertised: the controller quorum is static (Kafka with kraft.version 0 refuses it)",
  81: "not advertised, as AddRaftVoter",
  94: "not advertised as Kafka's UnregisterController: key 94 is KIP-1279's CreateClusterMirror here"
}
const SHARE = new Set([77, 78, 79, 83, 84, 85, 86, 87, 90, 91, 92])
const STREAMS = new Set([89, 93])
/** KIP-1279's API names by key (Kafka's tool does not know them). */
const KIP_1279: Readonly<Record<number, string>> = {
  94: "CreateClusterMirror",
  95: "StartMirrorTopics",
  96: "StopMirrorTopics",
  98: "ListClusterMirrors",
  99: "DescribeClusterMirrors",
  100: "ReadMirrorStates",
  101: "WriteMirrorStates",
  102: "PauseMirrorTopics",
  103: "ResumeMirrorTopics",
  104: "DeleteClusterMirror",
  105: "BumpLeaderEpochs",
  106: "RecoverMirrorTopics"
}

interface Row {
  readonly name: string
  readonly key: number
  readonly versions: string | null
}

/** The first node's block of `kafka-broker-api-versions` output. */
const parse = (stdout: string): ReadonlyArray<Row> => {
  const block = stdout.split(/\n\)\n/)[0] ?? ""
  const rows: Row[] = []
  for (const line of block.split("\n")) {
    const m = /^\s*(\w+)\((\d+)\): (.*?),?$/.exec(line)
    if (m === null) continue
    const versions = m[3]!.startsWith("UNSUPPORTED") ? null : m[3]!.replace(/ \[usable: \d+\]/, "").replace(" to ", "-")
    rows.push({ name: m[1]!, key: Number(m[2]), versions })
  }
  return rows
}

const apiVersions = async (bootstrap: string): Promise<ReadonlyArray<Row>> => {
  const r = JavaTools.expectSuccess(
    "kafka-broker-api-versions",
    await JavaTools.run(MAIN, ["--bootstrap-server", bootstrap])
  )
  return parse(r.stdout)
}

const port = await Ports.freePort()
const [ours, kafka] = await Promise.all([
  ServerProcess.start({ port, args: ["--embedded", "3"], readyLines: 4, config: { ...ServerProcess.TEST_DEFAULTS } }),
  ApacheKafka.startKafka({
    jvmFlags: ApacheKafka.FAST_START_JVM_FLAGS,
    properties: ApacheKafka.QUICK_SESSION_PROPERTIES
  })
])
try {
  const [theirs, mine] = await Promise.all([apiVersions(kafka.bootstrap), apiVersions(ours.bootstrap)])
  const byKey = new Map(mine.map((r) => [r.key, r]))
  const out: string[] = ["| Key | API | Apache Kafka 4.4 | clustermirror |", "| ---: | --- | --- | --- |"]
  for (const k of theirs.filter((r) => r.versions !== null)) {
    const ourRow = byKey.get(k.key)
    const served = ourRow?.versions ?? null
    const note =
      NOTES[k.key] ??
      (SHARE.has(k.key)
        ? "not advertised (share groups)"
        : STREAMS.has(k.key)
          ? "not advertised (streams groups)"
          : served === null
            ? "not advertised"
            : undefined)
    const ourCell =
      k.key === 94 ? NOTES[94]! : served === null ? note! : note === undefined ? served : `${served}; ${note}`
    out.push(`| ${k.key} | ${k.name} | ${k.versions} | ${ourCell} |`)
  }
  for (const r of mine.filter((r) => KIP_1279[r.key] !== undefined))
    out.push(`| ${r.key} | ${KIP_1279[r.key]} (KIP-1279) | not served | ${r.versions} |`)
  process.stdout.write(`${out.join("\n")}\n`)
} finally {
  await Promise.allSettled([ours.stop(), kafka.stop()])
}
