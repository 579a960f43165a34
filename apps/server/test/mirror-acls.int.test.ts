/**
 * The ACL sync of KIP-1279 §5.9 c between our clusters in this process (real TCP, StandardAuthorizer on
 * both sides, the clusters' own traffic as the super user User:ANONYMOUS): the source ACLs that
 * `mirror.acls.include` selects appear on the destination, the others do not, an ACL removed on the source
 * goes from the destination, destination ACLs the source does not have go, and CLUSTER_MIRROR ACLs are
 * neither copied nor deleted. A side without an authorizer is one `acls` sync error (log and metric) and
 * changes nothing.
 * Everything runs from the refresh loop (interval lowered per mirror); the status is read from
 * DescribeClusterMirrors. Last, a real Apache Kafka source with StandardAuthorizer, its ACLs managed with
 * Kafka's kafka-acls, and the result listed on our destination by kafka-acls too.
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { BrokerConfig } from "@clustermirror/broker-config"
import { Node } from "@clustermirror/broker"
import * as MirrorsCommand from "@clustermirror/cli"
import { ClusterClient, MirrorAdmin } from "@clustermirror/client"
import {
  CreateAcls,
  DeleteAcls,
  DescribeAcls,
  DescribeClusterMirrors,
  IncrementalAlterConfigs
} from "@clustermirror/protocol"
import { ApacheKafka, JavaTools, KafkaPeer, Ports, Wait } from "@clustermirror/testkit"
import { afterAll, beforeAll, describe, expect, it } from "vitest"

// Kafka's ACL codes.
const TOPIC = 2
const GROUP = 3
const CLUSTER_MIRROR = 8
const LITERAL = 3
const PREFIXED = 4
const READ = 3
const WRITE = 4
const ALL = 2
const ALTER = 7
const ALLOW = 3
const DENY = 2

interface Binding {
  readonly resourceType: number
  readonly resourceName: string
  readonly patternType: number
  readonly principal: string
  readonly host: string
  readonly operation: number
  readonly permissionType: number
}
const acl = (over: Partial<Binding>): Binding => ({
  resourceType: TOPIC,
  resourceName: "orders",
  patternType: LITERAL,
  principal: "User:app",
  host: "*",
  operation: READ,
  permissionType: ALLOW,
  ...over
})
const keyOf = (b: Binding) =>
  `${b.resourceType}/${b.patternType}/${b.resourceName}/${b.principal}/${b.host}/${b.operation}/${b.permissionType}`

const exact = (b: Binding) => ({
  resourceTypeFilter: b.resourceType,
  resourceNameFilter: b.resourceName,
  patternTypeFilter: b.patternType,
  principalFilter: b.principal,
  hostFilter: b.host,
  operation: b.operation,
  permissionType: b.permissionType
})

const listAcls = async (client: ClusterClient.Client): Promise<ReadonlyArray<string>> => {
  const res = await client.sendToAnyBroker(DescribeAcls.api, {
    resourceTypeFilter: 1,
    resourceNameFilter: null,
    patternTypeFilter: 1,
    principalFilter: null,
    hostFilter: null,
    operation: 1,
    permissionType: 1
  })
  expect(res.errorCode).toBe(0)
  return res.resources
    .flatMap((r) =>
      r.acls.map((a) =>
        keyOf({ resourceType: r.resourceType, resourceName: r.resourceName, patternType: r.patternType, ...a })
      )
    )
    .sort()
}
const createAcls = async (client: ClusterClient.Client, bindings: ReadonlyArray<Binding>) => {
  const res = await client.sendToAnyBroker(CreateAcls.api, {
    creations: bindings.map((b) => ({ ...b, resourcePatternType: b.patternType }))
  })
  expect(res.results.map((r) => r.errorCode)).toEqual(bindings.map(() => 0))
}
const deleteAcls = async (client: ClusterClient.Client, bindings: ReadonlyArray<Binding>) => {
  const res = await client.sendToAnyBroker(DeleteAcls.api, { filters: bindings.map(exact) })
  expect(res.filterResults.map((r) => r.errorCode)).toEqual(bindings.map(() => 0))
}
const sorted = (bindings: ReadonlyArray<Binding>) => bindings.map(keyOf).sort()

const base = (dataDir: string, secured: boolean): BrokerConfig.BrokerConfig => ({
  ...BrokerConfig.defaults,
  port: 0,
  dataDir,
  numPartitions: 1,
  defaultReplicationFactor: 1,
  offsetsTopicReplicationFactor: 1,
  mirrorStateTopicNumPartitions: 1,
  mirrorStateTopicReplicationFactor: 1,
  groupInitialRebalanceDelayMs: 0,
  brokerHeartbeatIntervalMs: 200,
  // authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer, super.users=User:ANONYMOUS
  authorizer: secured ? { superUsers: new Set(["User:ANONYMOUS"]), allowEveryoneIfNoAclFound: false } : null
})

describe("mirror ACL sync (mirror.acls.include)", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cm-mirror-acls-"))
  let source: Node.Embedded
  let destination: Node.Embedded
  let plain: Node.Embedded
  let src: ClusterClient.Client
  let dst: ClusterClient.Client
  let pln: ClusterClient.Client
  let metricsPort: number
  const syncErrors: Array<{
    readonly cluster: string
    readonly mirror: string
    readonly kind: string
    readonly error: string
  }> = []
  const collect = (cluster: string) => ({
    onSyncError: (mirror: string, kind: string, error: string) => syncErrors.push({ cluster, mirror, kind, error })
  })

  /** This mirror's ACL sync status on the cluster's (only) broker, the mirror's coordinator. */
  const aclStatus = async (client: ClusterClient.Client, mirror: string) => {
    const res = await client.sendToAnyBroker(DescribeClusterMirrors.api, {
      mirrorNames: [mirror],
      includeAuthorizedOperations: false
    })
    return res.mirrors[0]?.aclSyncStatuses[0]
  }
  /** Waits for `runs` more completed or failed runs of a mirror's ACL sync. */
  const moreRuns = async (client: ClusterClient.Client, mirror: string, runs: number) => {
    let last = (await aclStatus(client, mirror))?.timeMs ?? -1n
    for (let i = 0; i < runs; i++)
      last = await Wait.eventually(
        `run ${i + 1} of the ACL sync of ${mirror}`,
        async () => {
          const t = (await aclStatus(client, mirror))?.timeMs
          return t !== undefined && t > last ? t : undefined
        },
        60_000,
        50
      )
  }

  /**
   * Waits for a run that found nothing to change (a run right after one that changed ACLs may describe the
   * destination before its broker applied them, and create them again: CreateAcls of an existing binding
   * is a no-op).
   */
  const settled = (mirror: string) =>
    Wait.eventually(
      `a run of the ACL sync of ${mirror} with nothing to change`,
      async () => {
        const s = await aclStatus(dst, mirror)
        return s?.state === "SYNCED" && s.created === 0 && s.deleted === 0 ? true : undefined
      },
      60_000,
      50
    )

  // On the source: two selected by the rules, one not, one CLUSTER_MIRROR (never copied, though a rule names the type).
  const ordersRead = acl({})
  const ordersPrefixedWrite = acl({ resourceName: "orders-", patternType: PREFIXED, operation: WRITE })
  const otherGroup = acl({ resourceType: GROUP, resourceName: "audit", principal: "User:audit" })
  const sourceMirrorAcl = acl({ resourceType: CLUSTER_MIRROR, resourceName: "dr", operation: ALTER })
  // On the destination: its own CLUSTER_MIRROR ACL (kept) and a TOPIC ACL the source does not have (deleted).
  const destinationMirrorAcl = acl({
    resourceType: CLUSTER_MIRROR,
    resourceName: "*",
    operation: ALL,
    principal: "User:ops"
  })
  const destinationOnly = acl({ resourceName: "local", principal: "User:local", permissionType: DENY })
  const RULES = "TOPIC;orders.*;*;*;User:app,GROUP;app-.*;READ;ALLOW,CLUSTER_MIRROR"

  beforeAll(async () => {
    for (const d of ["source", "destination", "plain"]) fs.mkdirSync(path.join(dir, d))
    source = await Node.embedded(1, base(path.join(dir, "source"), true), () => {}, collect("source"))
    metricsPort = await Ports.freePort()
    destination = await Node.embedded(
      1,
      { ...base(path.join(dir, "destination"), true), metricsPort },
      () => {},
      collect("destination")
    )
    plain = await Node.embedded(1, base(path.join(dir, "plain"), false), () => {}, collect("plain"))
    src = new ClusterClient.Client({ bootstrapServers: [source.bootstrap], requestTimeoutMs: 30_000 })
    dst = new ClusterClient.Client({ bootstrapServers: [destination.bootstrap], requestTimeoutMs: 30_000 })
    pln = new ClusterClient.Client({ bootstrapServers: [plain.bootstrap], requestTimeoutMs: 30_000 })
    await createAcls(src, [ordersRead, ordersPrefixedWrite, otherGroup, sourceMirrorAcl])
    await createAcls(dst, [destinationMirrorAcl, destinationOnly])
    await Wait.eventually("the ACLs served", async () => {
      const [s, d] = await Promise.all([listAcls(src), listAcls(dst)])
      return s.length === 4 && d.length === 2 ? true : undefined
    })
  }, 120_000)

  afterAll(async () => {
    await src?.close()
    await dst?.close()
    await pln?.close()
    await plain?.close()
    await destination?.close()
    await source?.close()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it("an invalid rule is refused at create, naming the key and the rule", async () => {
    const admin = new MirrorAdmin.MirrorAdmin(dst)
    await expect(
      admin.createClusterMirror(
        "bad",
        new Map([
          ["bootstrap.servers", source.bootstrap],
          ["mirror.acls.include", "TOPIC;orders,TOPIC;*;FLY"]
        ])
      )
    ).rejects.toThrow(/mirror\.acls\.include.*invalid rule 'TOPIC;\*;FLY': unknown operation 'FLY'/)
  })

  it("copies the selected source ACLs, deletes the destination's others, keeps its CLUSTER_MIRROR ACLs, and follows source changes", async () => {
    const admin = new MirrorAdmin.MirrorAdmin(dst)
    await admin.createClusterMirror(
      "dr",
      new Map([
        ["bootstrap.servers", source.bootstrap],
        ["mirror.acls.include", RULES],
        ["mirror.metadata.refresh.interval.ms", "200"]
      ])
    )
    const expected = sorted([ordersRead, ordersPrefixedWrite, destinationMirrorAcl])
    await Wait.eventually(
      "the selected source ACLs on the destination",
      async () => ((await listAcls(dst)).join() === expected.join() ? true : undefined),
      60_000,
      100
    )
    await settled("dr")
    expect(await aclStatus(dst, "dr")).toMatchObject({
      state: "SYNCED",
      detail: null,
      synced: 2,
      created: 0,
      deleted: 0
    })
    expect(await listAcls(dst)).toEqual(expected)
    // The source keeps its own ACLs, CLUSTER_MIRROR included.
    expect(await listAcls(src)).toEqual(sorted([ordersRead, ordersPrefixedWrite, otherGroup, sourceMirrorAcl]))

    // Removed on the source: removed on the destination; a new selected one appears.
    const appGroup = acl({ resourceType: GROUP, resourceName: "app-billing" })
    await deleteAcls(src, [ordersRead])
    await createAcls(src, [appGroup])
    const next = sorted([ordersPrefixedWrite, appGroup, destinationMirrorAcl])
    await Wait.eventually(
      "the source's changes on the destination",
      async () => ((await listAcls(dst)).join() === next.join() ? true : undefined),
      60_000,
      100
    )
    await settled("dr")
    expect(await aclStatus(dst, "dr")).toMatchObject({ state: "SYNCED", synced: 2, created: 0, deleted: 0 })
    expect(syncErrors.filter((e) => e.kind === "acls" && e.mirror === "dr")).toEqual([])

    // An invalid rule is refused at alter too, naming the key and the rule; the rules in force stay.
    const altered = await dst.sendToAnyBroker(IncrementalAlterConfigs.api, {
      resources: [
        {
          resourceType: MirrorAdmin.CLUSTER_MIRROR_RESOURCE,
          resourceName: "dr",
          configs: [{ name: "mirror.acls.include", configOperation: 0, value: "TOPIC;(oops" }]
        }
      ],
      validateOnly: false
    })
    expect(altered.responses.map((r) => [r.errorCode, r.errorMessage])).toEqual([
      [
        40,
        "Invalid value TOPIC;(oops for configuration mirror.acls.include: invalid rule 'TOPIC;(oops': the resourceName '(oops' is not a valid regular expression"
      ]
    ])
    await moreRuns(dst, "dr", 1)
    expect(await listAcls(dst)).toEqual(next)
  })

  it("a source without an authorizer is one acls sync error, and nothing on the destination changes", async () => {
    const before = await listAcls(dst)
    const admin = new MirrorAdmin.MirrorAdmin(dst)
    await admin.createClusterMirror(
      "unsecured",
      new Map([
        ["bootstrap.servers", plain.bootstrap],
        ["mirror.metadata.refresh.interval.ms", "200"]
      ])
    )
    await moreRuns(dst, "unsecured", 3)
    const status = await aclStatus(dst, "unsecured")
    expect(status?.state).toBe("FAILED")
    expect(status?.detail).toContain("the source cluster has no authorizer")
    expect(syncErrors.filter((e) => e.mirror === "unsecured" && e.kind === "acls")).toEqual([
      {
        cluster: "destination",
        mirror: "unsecured",
        kind: "acls",
        error: expect.stringContaining(
          "the source cluster has no authorizer (DescribeAcls: Security features are disabled.)"
        )
      }
    ])
    expect(await listAcls(dst)).toEqual(before)
    // Counted once in the sync-error metric.
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()
    expect(metrics.split("\n")).toContain('clustermirror_mirror_sync_errors_total{mirror="unsecured",kind="acls"} 1')

    // The CLI shows both mirrors' last results.
    const cli = async (mirror: string, ...extra: Array<string>) => {
      const out: Array<string> = []
      const code = await MirrorsCommand.main(
        ["--bootstrap-server", destination.bootstrap, "--describe", "--acls", "--mirror", mirror, ...extra],
        { out: (l) => out.push(l), err: (l) => out.push(`ERR ${l}`) }
      )
      expect(code).toBe(0)
      return out.join("\n")
    }
    const table = (await cli("unsecured")).split("\n")
    expect(table[0]!.split(/\s+/)).toEqual(["STATE", "SYNCED", "CREATED", "DELETED", "LAST-SYNC", "DETAIL"])
    expect(table[1]).toMatch(/^FAILED\s+0\s+0\s+0\s+-\s+the source cluster has no authorizer/)
    expect(JSON.parse(await cli("dr", "--json"))).toEqual([
      expect.objectContaining({ state: "SYNCED", detail: null, synced: 2 })
    ])
    await admin.deleteClusterMirror("unsecured")
  })

  it("a destination without an authorizer is one acls sync error, and no crash", async () => {
    const admin = new MirrorAdmin.MirrorAdmin(pln)
    await admin.createClusterMirror(
      "back",
      new Map([
        ["bootstrap.servers", source.bootstrap],
        ["mirror.metadata.refresh.interval.ms", "200"]
      ])
    )
    await moreRuns(pln, "back", 3)
    expect(await aclStatus(pln, "back")).toMatchObject({ state: "FAILED" })
    expect(syncErrors.filter((e) => e.mirror === "back" && e.kind === "acls")).toEqual([
      {
        cluster: "plain",
        mirror: "back",
        kind: "acls",
        error: expect.stringContaining("the destination cluster has no authorizer")
      }
    ])
    // The source is untouched.
    expect(await listAcls(src)).toHaveLength(4)
  })
})

describe("mirror ACL sync from a real Apache Kafka source (StandardAuthorizer)", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cm-kafka-acls-"))
  let kafka: ApacheKafka.KafkaNode
  let destination: Node.Embedded
  let dst: ClusterClient.Client
  const syncErrors: Array<string> = []

  const kafkaAcls = async (bootstrap: string, args: ReadonlyArray<string>) =>
    JavaTools.expectSuccess("kafka-acls", await JavaTools.acls(["--bootstrap-server", bootstrap, ...args]))

  beforeAll(async () => {
    await KafkaPeer.libs()
    ;[kafka, destination] = await Promise.all([
      ApacheKafka.startKafka({
        jvmFlags: ApacheKafka.FAST_START_JVM_FLAGS,
        properties: {
          ...ApacheKafka.QUICK_SESSION_PROPERTIES,
          "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
          "super.users": "User:ANONYMOUS"
        }
      }),
      Node.embedded(1, base(dir, true), () => {}, {
        onSyncError: (_mirror, kind, error) => syncErrors.push(`${kind}: ${error}`)
      })
    ])
    dst = new ClusterClient.Client({ bootstrapServers: [destination.bootstrap], requestTimeoutMs: 30_000 })
  }, 300_000)

  afterAll(async () => {
    await dst?.close()
    await destination?.close()
    await kafka?.stop()
    fs.rmSync(dir, { recursive: true, force: true })
  })

  it("copies the ACLs kafka-acls added on Kafka that the rules select, and removes those kafka-acls removed", async () => {
    await kafkaAcls(kafka.bootstrap, [
      "--add",
      "--allow-principal",
      "User:app",
      "--operation",
      "Read",
      "--topic",
      "orders"
    ])
    await kafkaAcls(kafka.bootstrap, [
      ...["--add", "--allow-principal", "User:app", "--operation", "Write"],
      ...["--topic", "orders-", "--resource-pattern-type", "prefixed"]
    ])
    await kafkaAcls(kafka.bootstrap, [
      "--add",
      "--deny-principal",
      "User:audit",
      "--operation",
      "Read",
      "--group",
      "audit"
    ])

    const admin = new MirrorAdmin.MirrorAdmin(dst)
    await admin.createClusterMirror(
      "from-kafka",
      new Map([
        ["bootstrap.servers", kafka.bootstrap],
        ["mirror.acls.include", "TOPIC;orders.*;*;ALLOW;User:app"],
        ["mirror.metadata.refresh.interval.ms", "300"]
      ])
    )
    const expected = sorted([acl({}), acl({ resourceName: "orders-", patternType: PREFIXED, operation: WRITE })])
    await Wait.eventually(
      "Kafka's selected ACLs on the destination",
      async () => ((await listAcls(dst)).join() === expected.join() ? true : undefined),
      120_000,
      200
    )

    // Kafka's own tool lists them on our destination.
    const listed = await kafkaAcls(destination.bootstrap, ["--list", "--topic", "orders"])
    expect(listed.stdout).toContain("ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)")
    expect(listed.stdout).toContain("(principal=User:app, host=*, operation=READ, permissionType=ALLOW)")

    await kafkaAcls(kafka.bootstrap, [
      ...["--remove", "--force", "--allow-principal", "User:app", "--operation", "Read", "--topic", "orders"]
    ])
    const after = sorted([acl({ resourceName: "orders-", patternType: PREFIXED, operation: WRITE })])
    await Wait.eventually(
      "the ACL removed on Kafka gone from the destination",
      async () => ((await listAcls(dst)).join() === after.join() ? true : undefined),
      120_000,
      200
    )
    expect(syncErrors.filter((e) => e.startsWith("acls"))).toEqual([])
  }, 300_000)
})
