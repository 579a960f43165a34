import { ClientError, type MirrorAdmin } from "@clustermirror/client"
import { describe, expect, it } from "@effect/vitest"
import * as MirrorsCommand from "../src/MirrorsCommand.js"

const parse = (line: string) => MirrorsCommand.parse(line.split(" "))

describe("MirrorsCommand.parse", () => {
  it("reads an action with its options", () => {
    expect(parse("--bootstrap-server h:1 --start --mirror m --topics a,b.c,x.* --exclude x.tmp")).toMatchObject({
      action: "start",
      bootstrapServer: "h:1",
      mirror: "m",
      topics: ["a", "b.c", "x.*"],
      exclude: ["x.tmp"]
    })
    expect(parse("--bootstrap-server=h:1 --list")).toMatchObject({ action: "list", mirror: null })
    expect(parse("--bootstrap-server h:1 --describe --failed --json")).toMatchObject({
      action: "describe",
      mirror: null,
      failed: true,
      json: true
    })
    expect(parse("--bootstrap-server h:1 --describe --mirror m")).toMatchObject({
      mirror: "m",
      failed: false,
      json: false
    })
    expect(parse("--bootstrap-server h:1 --recover --mirror m --topics a,x.*")).toMatchObject({
      action: "recover",
      mirror: "m",
      topics: ["a", "x.*"],
      acceptDataLoss: false
    })
    expect(parse("--bootstrap-server h:1 --recover --mirror m --topics a --accept-data-loss")).toMatchObject({
      action: "recover",
      acceptDataLoss: true
    })
  })

  it("refuses what kafka-cluster-mirrors.sh refuses", () => {
    for (const bad of [
      "--bootstrap-server h:1",
      "--bootstrap-server h:1 --list --delete --mirror m",
      "--list",
      "--bootstrap-server h:1 --create --mirror m",
      "--bootstrap-server h:1 --start --mirror m",
      "--bootstrap-server h:1 --stop --mirror m --topics a --exclude b",
      "--bootstrap-server h:1 --delete",
      "--bootstrap-server h:1 --list --json",
      "--bootstrap-server h:1 --list --failed",
      "--bootstrap-server h:1 --pause --mirror m --topics a --json",
      "--bootstrap-server h:1 --describe --recover --mirror m --topics a",
      "--bootstrap-server h:1 --describe --topics a",
      "--bootstrap-server h:1 --recover --topics a",
      "--bootstrap-server h:1 --recover --mirror m",
      "--bootstrap-server h:1 --recover --mirror m --topics a --failed",
      "--bootstrap-server h:1 --list --nope",
      "--bootstrap-server h:1 --stop --mirror m --topics a --dry-run",
      "--bootstrap-server h:1 --start --mirror m --topics a --accept-data-loss",
      "--bootstrap-server"
    ])
      expect(() => parse(bad), bad).toThrow(MirrorsCommand.UsageError)
  })

  it("reads --dry-run with --start", () => {
    expect(parse("--bootstrap-server h:1 --start --mirror m --topics a --dry-run").dryRun).toBe(true)
    expect(parse("--bootstrap-server h:1 --start --mirror m --topics a").dryRun).toBe(false)
  })

  it("formats the failback preview per partition, sorted, '-' without a last mirror epoch", () => {
    const lines = MirrorsCommand.formatPreview("back", [
      { topic: "b", partition: 0, lastMirrorEpoch: -1, highWatermark: 10n, truncateTo: 0n, recordsCut: 10n },
      { topic: "a", partition: 1, lastMirrorEpoch: 4, highWatermark: 120n, truncateTo: 100n, recordsCut: 20n }
    ]).split("\n")
    expect(lines[0]!.split(/\s+/)).toEqual([
      "MIRROR",
      "TOPIC",
      "PARTITION",
      "LAST-MIRROR-EPOCH",
      "HIGH-WATERMARK",
      "TRUNCATE-TO",
      "RECORDS-CUT"
    ])
    expect(lines.slice(1).map((l) => l.split(/\s+/))).toEqual([
      ["back", "a", "1", "4", "120", "100", "20"],
      ["back", "b", "0", "-", "10", "0", "10"]
    ])
    expect(MirrorsCommand.formatPreview("back", [])).toMatch(/No existing topics/)
  })
})

describe("MirrorsCommand helpers", () => {
  it("reads properties files", () => {
    const props = MirrorsCommand.parseProperties(
      "# c\nbootstrap.servers = a:1,b:2\n! x\nmirror.source.cluster.id: abc\n\n"
    )
    expect([...props]).toEqual([
      ["bootstrap.servers", "a:1,b:2"],
      ["mirror.source.cluster.id", "abc"]
    ])
  })

  it("reads the admin client settings of --command-config and refuses what it does not implement", () => {
    const config = (text: string) =>
      MirrorsCommand.adminConfig(MirrorsCommand.parseProperties(text), "admin.properties")
    expect(config("client.id=ops\nrequest.timeout.ms=120000\n")).toEqual({
      clientId: "ops",
      requestTimeoutMs: 120_000,
      protocol: "PLAINTEXT"
    })
    expect(config("")).toEqual({ protocol: "PLAINTEXT" })
    for (const bad of ["abc", "0", "-5", "1.5", ""])
      expect(() => config(`request.timeout.ms=${bad}`)).toThrow(/invalid request.timeout.ms in admin.properties/)
    expect(() => config("retries=10")).toThrow(/unsupported admin client property in admin.properties: retries/)
  })

  it("reads Kafka's client security configs in --command-config, refusing what cannot be used without showing a secret", () => {
    const config = (text: string) =>
      MirrorsCommand.adminConfig(MirrorsCommand.parseProperties(text), "admin.properties")
    const secret = "cli-secret-never-shown"
    const scram = `sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="ops" password="${secret}";`
    const sasl = config(`security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n${scram}\nclient.id=ops\n`)
    expect(sasl.protocol).toBe("SASL_SSL")
    expect(sasl.clientId).toBe("ops")
    expect(sasl.security?.sasl).toEqual({ mechanism: "SCRAM-SHA-512", username: "ops", password: secret })
    expect(sasl.security?.tls).toMatchObject({ minVersion: "TLSv1.2", maxVersion: "TLSv1.3" })
    expect(config("security.protocol=plaintext\n")).toEqual({ protocol: "PLAINTEXT" })
    const refusal = (text: string) => {
      try {
        config(text)
      } catch (e) {
        expect(e).toBeInstanceOf(MirrorsCommand.UsageError)
        return e instanceof Error ? e.message : ""
      }
      throw new Error("expected a refusal")
    }
    expect(refusal("security.protocol=SSL\nssl.truststore.locaton=/ca.pem\n")).toBe(
      "invalid ssl.truststore.locaton in admin.properties: is not a known security config"
    )
    expect(refusal("security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location=/nowhere/ca.pem\n")).toBe(
      "invalid ssl.truststore.location in admin.properties: cannot read /nowhere/ca.pem (ENOENT)"
    )
    const wrongModule = refusal(`security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n${scram}\n`)
    expect(wrongModule).toMatch(/^invalid sasl.jaas.config in admin.properties: the login module /)
    expect(wrongModule).not.toContain(secret)
    expect(refusal(`${scram}\n`)).toBe(
      "invalid sasl.jaas.config in admin.properties: is a SASL setting, and security.protocol PLAINTEXT does not use SASL (SASL_PLAINTEXT or SASL_SSL do)"
    )
  })

  it("describes a mirror's configs as kafka-configs does, a secret only as sensitive", () => {
    const entries = [
      { name: "sasl.jaas.config", value: null, isSensitive: true },
      { name: "bootstrap.servers", value: "a:1", isSensitive: false },
      { name: "ssl.key.password", value: "leaked-by-a-broker", isSensitive: true }
    ]
    expect(MirrorsCommand.formatConfigs("dr", entries)).toBe(
      [
        "Dynamic configs for cluster mirror dr are:",
        "  bootstrap.servers=a:1 sensitive=false",
        "  sasl.jaas.config=null sensitive=true",
        "  ssl.key.password=null sensitive=true"
      ].join("\n")
    )
    expect(JSON.parse(MirrorsCommand.formatConfigsJson(entries))).toEqual([
      { name: "bootstrap.servers", value: "a:1", sensitive: false },
      { name: "sasl.jaas.config", value: null, sensitive: true },
      { name: "ssl.key.password", value: null, sensitive: true }
    ])
    const parsed = MirrorsCommand.parse([
      "--bootstrap-server",
      "b:1",
      "--describe",
      "--configs",
      "--mirror",
      "dr",
      "--json"
    ])
    expect([parsed.action, parsed.configs, parsed.json]).toEqual(["describe", true, true])
    expect(() => MirrorsCommand.parse(["--bootstrap-server", "b:1", "--describe", "--configs"])).toThrow(
      "--mirror is required with --configs"
    )
    expect(() => MirrorsCommand.parse(["--bootstrap-server", "b:1", "--list", "--configs"])).toThrow(
      "--configs is only valid with --describe"
    )
  })

  it("tells names from patterns and matches patterns in full", () => {
    expect(["orders", "a.b-c_d", "x.*", "a|b", "[ab]"].map(MirrorsCommand.isLiteralName)).toEqual([
      true,
      true,
      false,
      false,
      false
    ])
    const m = MirrorsCommand.matcher(["x.*", "y"])
    expect(["x", "xa", "y", "yy", "ax"].map(m)).toEqual([true, true, true, false, false])
    expect(MirrorsCommand.matcher([])("x")).toBe(false)
  })

  it("formats the list as fixed columns with '-' for empty values", () => {
    expect(MirrorsCommand.formatList([])).toBe("No mirrors found")
    const long = "m".repeat(40)
    const lines = MirrorsCommand.formatList([
      { mirrorName: long, sourceBootstrap: "s:9092", sourceClusterId: "", topicCount: 2, topicNames: [] }
    ]).split("\n")
    expect(lines[0]).toBe(
      `${"MIRROR".padEnd(30)} ${"TOPICS".padEnd(10)} ${"SOURCE-CLUSTER-ID".padEnd(26)} SOURCE-BOOTSTRAP-SERVER`
    )
    expect(lines[1]).toBe(`${`${"m".repeat(26)}...`.padEnd(30)} ${"2".padEnd(10)} ${"-".padEnd(26)} s:9092`)
  })

  it("names Kafka errors", () => {
    const e = new ClientError.KafkaError({ errorCode: 137, errorMessage: "no such mirror", context: "x" })
    expect(MirrorsCommand.describeError(e)).toBe(`${e.errorName}: no such mirror`)
  })
})

const described = (
  partition: number,
  over: Partial<MirrorAdmin.PartitionDescription> = {}
): MirrorAdmin.PartitionDescription => ({
  topic: "orders",
  partition,
  sourceOffset: 120n,
  destinationOffset: 100n,
  lagTimeMs: -1n,
  lag: 20n,
  state: "MIRRORING",
  retryAttempt: 0,
  errorMessage: null,
  ...over
})

const failedPartition = (partition: number, retryAttempt: number, errorMessage: string | null) =>
  described(partition, {
    sourceOffset: -1n,
    destinationOffset: -1n,
    lag: -1n,
    state: "FAILED",
    retryAttempt,
    errorMessage
  })

const mirrors: ReadonlyArray<MirrorAdmin.MirrorDescription> = [
  {
    mirrorName: "west",
    errorCode: 0,
    partitions: [described(1), failedPartition(0, 3, "source unreachable"), described(0, { topic: "audit" })]
  },
  { mirrorName: "gone", errorCode: 137, partitions: [described(9)] },
  { mirrorName: "east", errorCode: 0, partitions: [failedPartition(2, -1, "source topic deleted")] }
]

describe("MirrorsCommand --describe output", () => {
  it("takes the partitions of described mirrors, sorted by mirror, topic and partition", () => {
    const rows = MirrorsCommand.describeRows(mirrors, false)
    expect(rows.map((r) => `${r.mirror}/${r.topic}-${r.partition}`)).toEqual([
      "east/orders-2",
      "west/audit-0",
      "west/orders-0",
      "west/orders-1"
    ])
    expect(MirrorsCommand.describeRows(mirrors, true).map((r) => `${r.mirror}/${r.topic}-${r.partition}`)).toEqual([
      "east/orders-2",
      "west/orders-0"
    ])
  })

  it("formats the table in fixed columns, -1 as '-', long mirror names cut with '...'", () => {
    expect(MirrorsCommand.formatDescribe([])).toBe("No mirror partitions found")
    const long = "m".repeat(35)
    const lines = MirrorsCommand.formatDescribe([
      { ...described(7), mirror: long },
      { ...failedPartition(8, 1, "x"), mirror: "west" }
    ]).split("\n")
    expect(lines).toEqual([
      `${"MIRROR".padEnd(30)} ${"TOPIC".padEnd(40)} ${"PARTITION".padEnd(10)} ${"SOURCE-OFFSET".padEnd(15)} ${"DESTINATION-OFFSET".padEnd(18)} ${"LAG".padEnd(10)} STATE`,
      `${`${"m".repeat(26)}...`.padEnd(30)} ${"orders".padEnd(40)} ${"7".padEnd(10)} ${"120".padEnd(15)} ${"100".padEnd(18)} ${"20".padEnd(10)} MIRRORING`,
      `${"west".padEnd(30)} ${"orders".padEnd(40)} ${"8".padEnd(10)} ${"-".padEnd(15)} ${"-".padEnd(18)} ${"-".padEnd(10)} FAILED`
    ])
  })

  it("formats failed partitions with their retries and errors cut to 80 characters", () => {
    expect(MirrorsCommand.formatFailed([], 100)).toBe("No failed partitions found")
    const long = `${"e".repeat(79)}XYZ`
    const lines = MirrorsCommand.formatFailed(
      [
        { ...failedPartition(0, 3, "source\nunreachable"), mirror: "west" },
        { ...failedPartition(1, -1, long), mirror: "west" },
        { ...failedPartition(2, 0, null), mirror: "west" }
      ],
      10
    ).split("\n")
    const prefix = (p: number) => `${"west".padEnd(30)} ${"orders".padEnd(40)} ${String(p).padEnd(10)}`
    expect(lines).toEqual([
      `${"MIRROR".padEnd(30)} ${"TOPIC".padEnd(40)} ${"PARTITION".padEnd(10)} ${"RETRY".padEnd(15)} ERROR`,
      `${prefix(0)} ${"3/10".padEnd(15)} source unreachable`,
      `${prefix(1)} ${"NonRetryable".padEnd(15)} ${"e".repeat(77)}...`,
      `${prefix(2)} ${"0/10".padEnd(15)} -`
    ])
    expect(lines[2]!.split(" ").at(-1)).toHaveLength(80)
  })

  it("formats JSON with numbers, not strings", () => {
    expect(MirrorsCommand.formatJson([])).toBe("[]")
    const rows = MirrorsCommand.describeRows(mirrors, true)
    expect(JSON.parse(MirrorsCommand.formatJson(rows))).toEqual([
      {
        mirror: "east",
        topic: "orders",
        partition: 2,
        sourceOffset: -1,
        destinationOffset: -1,
        lag: -1,
        lagTimeMs: -1,
        state: "FAILED",
        retryAttempt: -1,
        errorMessage: "source topic deleted"
      },
      {
        mirror: "west",
        topic: "orders",
        partition: 0,
        sourceOffset: -1,
        destinationOffset: -1,
        lag: -1,
        lagTimeMs: -1,
        state: "FAILED",
        retryAttempt: 3,
        errorMessage: "source unreachable"
      }
    ])
    expect(JSON.parse(MirrorsCommand.formatJson([{ ...described(0), mirror: "m" }]))[0]).toMatchObject({
      sourceOffset: 120,
      destinationOffset: 100,
      lag: 20
    })
  })

  it("writes the JSON of each row through its Schema: these keys in this order, int64 as numbers, null kept", () => {
    const row = { ...described(3, { lagTimeMs: 250n }), mirror: "m", extra: "not in the schema" }
    expect(MirrorsCommand.formatJson([row])).toBe(
      '[{"mirror":"m","topic":"orders","partition":3,"sourceOffset":120,"destinationOffset":100,"lag":20,' +
        '"lagTimeMs":250,"state":"MIRRORING","retryAttempt":0,"errorMessage":null}]'
    )
  })

  it("refuses an offset without an exact JSON number instead of rounding it", () => {
    const huge = { ...described(0, { sourceOffset: 2n ** 60n + 1n }), mirror: "m" }
    expect(() => MirrorsCommand.formatJson([huge])).toThrow(/sourceOffset/)
  })

  it("reads the retry bound from the broker config, else our default", () => {
    const bound = (value: string | null | undefined) =>
      MirrorsCommand.retryMaxAttempts(
        new Map(value === undefined ? [] : [[MirrorsCommand.RETRY_MAX_ATTEMPTS_CONFIG, value]])
      )
    expect(bound("7")).toBe(7)
    expect(bound("0")).toBe(0)
    expect([bound(undefined), bound(null), bound(""), bound("many"), bound("-3")]).toEqual([100, 100, 100, 100, 100])
  })
})

describe("MirrorsCommand usage", () => {
  it("lists every action and nothing unsupported", () => {
    for (const action of ["create", "start", "stop", "pause", "resume", "recover", "list", "describe", "delete"])
      expect(MirrorsCommand.usage).toContain(`--${action}`)
    expect(MirrorsCommand.usage).not.toMatch(/not supported/)
  })
})

describe("MirrorsCommand --describe --groups", () => {
  it("needs --describe and --mirror, and excludes --failed", () => {
    expect(parse("--bootstrap-server h:1 --describe --groups --mirror m")).toMatchObject({
      action: "describe",
      mirror: "m",
      groups: true,
      json: false
    })
    expect(parse("--bootstrap-server h:1 --describe --groups --mirror m --json").json).toBe(true)
    expect(parse("--bootstrap-server h:1 --describe --mirror m").groups).toBe(false)
    expect(() => parse("--bootstrap-server h:1 --describe --groups")).toThrow(MirrorsCommand.UsageError)
    expect(() => parse("--bootstrap-server h:1 --list --groups --mirror m")).toThrow(MirrorsCommand.UsageError)
    expect(() => parse("--bootstrap-server h:1 --describe --groups --failed --mirror m")).toThrow(
      MirrorsCommand.UsageError
    )
  })

  const statuses: ReadonlyArray<MirrorAdmin.GroupSyncStatus> = [
    {
      group: "billing",
      state: "CLAMPED",
      detail: null,
      timeMs: 0,
      lastSyncedMs: 0,
      offsets: [
        { topic: "orders", partition: 0, sourceOffset: 5n, offset: 40n, leaderEpoch: 2 },
        { topic: "orders", partition: 1, sourceOffset: 9n, offset: 9n, leaderEpoch: 2 }
      ]
    },
    { group: "live", state: "SKIPPED_ACTIVE", detail: "Stable", timeMs: 0, lastSyncedMs: -1, offsets: [] }
  ]

  it("prints one row per synced partition and one per group without offsets", () => {
    const lines = MirrorsCommand.formatGroupSync(statuses).split("\n")
    expect(lines[0]!.split(/\s+/)).toEqual([
      "GROUP",
      "STATE",
      "TOPIC",
      "PARTITION",
      "SOURCE-OFFSET",
      "OFFSET",
      "LAST-SYNC",
      "DETAIL"
    ])
    expect(lines.slice(1).map((l) => l.split(/\s+/))).toEqual([
      ["billing", "CLAMPED", "orders", "0", "5", "40", "1970-01-01T00:00:00.000Z", "-"],
      ["billing", "CLAMPED", "orders", "1", "9", "9", "1970-01-01T00:00:00.000Z", "-"],
      ["live", "SKIPPED_ACTIVE", "-", "-", "-", "-", "-", "Stable"]
    ])
    expect(MirrorsCommand.formatGroupSync([])).toBe("No group sync status found")
  })

  it("writes the groups' JSON through its Schema, keys in order", () => {
    expect(MirrorsCommand.formatGroupSyncJson(statuses.slice(1))).toBe(
      '[{"group":"live","state":"SKIPPED_ACTIVE","detail":"Stable","timeMs":0,"lastSyncedMs":-1,"offsets":[]}]'
    )
  })

  it("prints JSON with numbers", () => {
    expect(JSON.parse(MirrorsCommand.formatGroupSyncJson(statuses))[0]).toEqual({
      group: "billing",
      state: "CLAMPED",
      detail: null,
      timeMs: 0,
      lastSyncedMs: 0,
      offsets: [
        { topic: "orders", partition: 0, sourceOffset: 5, offset: 40, leaderEpoch: 2 },
        { topic: "orders", partition: 1, sourceOffset: 9, offset: 9, leaderEpoch: 2 }
      ]
    })
  })
})

describe("MirrorsCommand --describe --acls", () => {
  it("needs --describe and --mirror, and excludes the other describe views", () => {
    expect(parse("--bootstrap-server h:1 --describe --acls --mirror m")).toMatchObject({
      action: "describe",
      mirror: "m",
      acls: true,
      groups: false,
      json: false
    })
    expect(parse("--bootstrap-server h:1 --describe --mirror m").acls).toBe(false)
    for (const bad of [
      "--describe --acls",
      "--list --acls --mirror m",
      "--describe --acls --groups --mirror m",
      "--describe --acls --failed --mirror m",
      "--describe --acls --configs --mirror m"
    ])
      expect(() => parse(`--bootstrap-server h:1 ${bad}`)).toThrow(MirrorsCommand.UsageError)
  })

  const status: MirrorAdmin.AclSyncStatus = {
    state: "FAILED",
    detail: "the source cluster has no authorizer",
    timeMs: 5,
    lastSyncedMs: 0,
    synced: 4,
    created: 1,
    deleted: 2
  }

  it("prints the last result in one row, or that there is none", () => {
    const lines = MirrorsCommand.formatAclSync(status).split("\n")
    expect(lines[0]!.split(/\s+/)).toEqual(["STATE", "SYNCED", "CREATED", "DELETED", "LAST-SYNC", "DETAIL"])
    expect(lines[1]).toMatch(/^FAILED\s+4\s+1\s+2\s+1970-01-01T00:00:00.000Z\s+the source cluster has no authorizer$/)
    expect(MirrorsCommand.formatAclSync(undefined)).toBe("No ACL sync status found")
  })

  it("writes JSON through its Schema, keys in order; [] before the first sync", () => {
    expect(MirrorsCommand.formatAclSyncJson(status)).toBe(
      '[{"state":"FAILED","detail":"the source cluster has no authorizer","timeMs":5,"lastSyncedMs":0,"synced":4,"created":1,"deleted":2}]'
    )
    expect(MirrorsCommand.formatAclSyncJson(undefined)).toBe("[]")
  })
})

describe("MirrorsCommand --start output", () => {
  const result = (
    name: string,
    source: MirrorAdmin.StartTopicResult["source"],
    error: ClientError.KafkaError | null = null
  ): MirrorAdmin.StartTopicResult => ({
    name,
    error,
    source,
    sourceError:
      source === "unreachable"
        ? new ClientError.SourceUnreachable({ bootstrap: "src:9092", reason: "connect ECONNREFUSED 10.0.0.1:9092" })
        : null
  })

  it("starts the topics the source has, as before", () => {
    expect(MirrorsCommand.formatStart("dr", [], [result("payments", "present")])).toEqual({
      out: ["Started 1 mirror topic(s) in mirror dr: [payments]"],
      err: [],
      code: 0
    })
  })

  it("says a topic absent on the source is recorded in the include list and waits for it", () => {
    const report = MirrorsCommand.formatStart("dr", [], [result("later", "absent")])
    expect(report.code).toBe(0)
    expect(report.err).toEqual([])
    expect(report.out).toEqual([
      "Topic(s) [later] do not exist on the source yet: recorded in mirror dr's mirror.topics.include; " +
        "mirroring starts when they appear on the source."
    ])
    expect(report.out.join("\n")).not.toContain("Started")
  })

  it("says a pattern that matched nothing is saved for auto-discovery, as the KIP's tool does", () => {
    expect(MirrorsCommand.formatStart("dr", ["orders-.*"], [])).toEqual({
      out: ["No matching topics found yet. Patterns saved to mirror dr for auto-discovery."],
      err: [],
      code: 0
    })
    const matched = MirrorsCommand.formatStart("dr", ["orders-.*"], [result("orders-1", "present")])
    expect(matched.out[0]).toBe("Started 1 mirror topic(s) in mirror dr: [orders-1]")
    expect(matched.out[1]).toContain("Patterns [orders-.*] saved to mirror dr")
  })

  it("says when the source could not be asked, with where and why, and fails", () => {
    const report = MirrorsCommand.formatStart("dr", [], [result("t", "unreachable")])
    expect(report.code).toBe(1)
    expect(report.out).toEqual([])
    expect(report.err[0]).toContain("cannot reach the source at src:9092: connect ECONNREFUSED 10.0.0.1:9092")
    expect(report.err[0]).toContain("recorded in mirror dr's mirror.topics.include")
  })

  it("reports refused topics on stderr and fails", () => {
    const refused = new ClientError.KafkaError({ errorCode: 138, errorMessage: "in another mirror", context: "x" })
    const report = MirrorsCommand.formatStart("dr", [], [result("a", "present"), result("b", "present", refused)])
    expect(report.out).toEqual(["Started 1 mirror topic(s) in mirror dr: [a]"])
    expect(report.err).toEqual([`Failed to start mirroring topic b: ${refused.errorName}: in another mirror`])
    expect(report.code).toBe(1)
  })
})

describe("MirrorsCommand --describe of offline partitions", () => {
  it("shows a partition without a live leader as OFFLINE with unknown offsets", () => {
    const lines = MirrorsCommand.formatDescribe(
      MirrorsCommand.describeRows(
        [
          {
            mirrorName: "dr",
            errorCode: 0,
            partitions: [
              described(0),
              described(1, {
                sourceOffset: -1n,
                destinationOffset: -1n,
                lag: -1n,
                state: "OFFLINE",
                retryAttempt: -1,
                errorMessage: "No leader (leader -1)"
              })
            ]
          }
        ],
        false
      )
    ).split("\n")
    expect(lines[2]!.split(/\s+/)).toEqual(["dr", "orders", "1", "-", "-", "-", "OFFLINE"])
  })
})

describe("MirrorsCommand errors", () => {
  it("says where the source is and why it cannot be reached", () => {
    const e = new ClientError.SourceUnreachable({ bootstrap: "src:9092", reason: "connect ECONNREFUSED 10.0.0.1:9092" })
    expect(MirrorsCommand.describeError(e)).toBe(
      "cannot reach the source at src:9092: connect ECONNREFUSED 10.0.0.1:9092"
    )
  })
})
