/**
 * ACLs with real peers, against a controller and a broker as separate processes with
 * `authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer`. On these plaintext
 * listeners every connection is `User:ANONYMOUS`, so the admin steps run while `super.users=User:ANONYMOUS`: Kafka's
 * kafka-acls adds and lists ACLs, kafkajs' admin creates, describes and deletes them. Both nodes then
 * restart without the super user: the ACLs are still there (metadata records), and they decide what
 * kcat (librdkafka) may do — a topic without DESCRIBE is missing from `kcat -L`, one with DESCRIBE but
 * without READ answers TOPIC_AUTHORIZATION_FAILED to a consumer, a topic with ALL works — and
 * kafka-acls --remove takes effect.
 */
import { readFileSync, writeFileSync } from "node:fs"
import { AclOperationTypes, AclPermissionTypes, AclResourceTypes, ResourcePatternTypes } from "kafkajs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { JavaTools, Kcat, Wait } from "@clustermirror/testkit"
import { type Cluster, cli, startCluster } from "./harness.js"

const AUTHORIZER = {
  "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
  "super.users": "User:ANONYMOUS"
}

describe("ACLs with kafka-acls, kafkajs and kcat (separate processes)", () => {
  let cluster: Cluster
  let bootstrap: string

  beforeAll(async () => {
    cluster = await startCluster({ brokers: 1, controllerConfig: AUTHORIZER, brokerConfig: AUTHORIZER })
    bootstrap = cluster.cluster.bootstrap
  }, 240_000)

  afterAll(async () => {
    await cluster?.stop()
  })

  const acls = async (args: ReadonlyArray<string>) =>
    JavaTools.expectSuccess("kafka-acls", await JavaTools.acls(["--bootstrap-server", bootstrap, ...args]))
  const kcat = (args: ReadonlyArray<string>, input?: string) =>
    Kcat.kcat(["-b", bootstrap, ...args], { timeoutMs: 60_000, ...(input === undefined ? {} : { input }) })
  const metadataTopics = async () => {
    const out = await kcat(["-L", "-J"])
    const parsed = JSON.parse(out.stdout) as { topics: ReadonlyArray<{ topic: string; error?: string }> }
    return parsed.topics.map((t) => t.topic).sort()
  }

  it("kafka-acls adds and lists ACLs", async () => {
    await acls([
      "--add",
      "--allow-principal",
      "User:ANONYMOUS",
      ...["ClusterAction", "Describe", "Alter", "Create", "IdempotentWrite"].flatMap((o) => ["--operation", o]),
      "--cluster"
    ])
    await acls([
      "--add",
      "--allow-principal",
      "User:ANONYMOUS",
      "--operation",
      "All",
      "--topic",
      "open-",
      "--resource-pattern-type",
      "prefixed",
      "--group",
      "*"
    ])
    await acls(["--add", "--allow-principal", "User:ANONYMOUS", "--operation", "Describe", "--topic", "described"])
    await acls(["--add", "--allow-principal", "User:bob", "--operation", "Read", "--topic", "secret"])
    const listed = (await acls(["--list", "--topic", "described"])).stdout
    expect(listed).toContain("name=described, patternType=LITERAL")
    expect(listed).toContain("(principal=User:ANONYMOUS, host=*, operation=DESCRIBE, permissionType=ALLOW)")
    const all = (await acls(["--list"])).stdout
    expect(all).toContain("name=open-, patternType=PREFIXED")
    expect(all).toContain("name=kafka-cluster, patternType=LITERAL")
    expect(all).toContain("operation=CLUSTER_ACTION")
    expect(all).toContain("(principal=User:bob, host=*, operation=READ, permissionType=ALLOW)")
  }, 180_000)

  it("kafkajs' admin creates, describes and deletes ACLs", async () => {
    const admin = cluster.brokers[0]!.kafka("acls-admin").admin()
    await admin.connect()
    try {
      const acl = {
        resourceType: AclResourceTypes.TOPIC,
        resourceName: "kafkajs-topic",
        resourcePatternType: ResourcePatternTypes.LITERAL,
        principal: "User:alice",
        host: "*",
        operation: AclOperationTypes.WRITE,
        permissionType: AclPermissionTypes.ALLOW
      }
      expect(await admin.createAcls({ acl: [acl] })).toBe(true)
      const filter = {
        resourceType: AclResourceTypes.TOPIC,
        resourceName: "kafkajs-topic",
        resourcePatternType: ResourcePatternTypes.MATCH,
        operation: AclOperationTypes.ANY,
        permissionType: AclPermissionTypes.ANY
      }
      const described = await Wait.eventually("the created ACL", async () => {
        const res = await admin.describeAcls(filter)
        return res.resources.length > 0 ? res : undefined
      })
      expect(described.resources).toEqual([
        {
          resourceType: AclResourceTypes.TOPIC,
          resourceName: "kafkajs-topic",
          resourcePatternType: ResourcePatternTypes.LITERAL,
          acls: [
            {
              principal: "User:alice",
              host: "*",
              operation: AclOperationTypes.WRITE,
              permissionType: AclPermissionTypes.ALLOW
            }
          ]
        }
      ])
      const deleted = await admin.deleteAcls({ filters: [filter] })
      expect(deleted.filterResponses[0]!.errorCode).toBe(0)
      expect(deleted.filterResponses[0]!.matchingAcls.map((m) => m.resourceName)).toEqual(["kafkajs-topic"])
      // The topics the next steps use, with data, while ANONYMOUS is still a super user.
      await admin.createTopics({
        topics: ["open-1", "described", "secret"].map((topic) => ({ topic, numPartitions: 1, replicationFactor: 1 })),
        waitForLeaders: true
      })
    } finally {
      await admin.disconnect()
    }
    await kcat(["-P", "-t", "described"], "hidden\n")
  }, 120_000)

  it("keeps the ACLs across a controller and broker restart, and kcat sees what they allow", async () => {
    const nodes = [cluster.cluster.brokers[0]!, cluster.cluster.controller]
    for (const node of nodes) await cluster.cluster.kill(node.nodeId, "SIGTERM")
    // Without the super user now: only the ACLs decide.
    for (const node of nodes)
      writeFileSync(
        node.configFile,
        readFileSync(node.configFile, "utf8")
          .split("\n")
          .filter((l) => !l.startsWith("super.users="))
          .join("\n")
      )
    await cluster.cluster.start(cluster.cluster.controller.nodeId)
    await cluster.cluster.start(cluster.cluster.brokers[0]!.nodeId)

    const listed = (await acls(["--list"])).stdout
    expect(listed).toContain("name=described, patternType=LITERAL")
    expect(listed).toContain("name=open-, patternType=PREFIXED")
    expect(listed).not.toContain("kafkajs-topic")

    // DESCRIBE on "described", nothing on "secret" (only bob may read it).
    const topics = await Wait.eventually("the topics in kcat -L", async () => {
      const t = await metadataTopics()
      return t.includes("open-1") ? t : undefined
    })
    expect(topics).toContain("described")
    expect(topics).not.toContain("secret")

    const consumed = await kcat(["-C", "-t", "described", "-o", "beginning", "-e"]).then(
      () => "consumed",
      (e: unknown) => String(e)
    )
    expect(consumed).toMatch(/Topic authorization failed/i)

    await kcat(["-P", "-t", "open-1"], "a\nb\nc\n")
    const out = await kcat(["-C", "-t", "open-1", "-o", "beginning", "-e", "-q"])
    expect(out.stdout.split("\n").filter((l) => l !== "")).toEqual(["a", "b", "c"])
  }, 240_000)

  it("kafka-acls --remove takes DESCRIBE away: the topic leaves kcat -L", async () => {
    await acls([
      "--remove",
      "--force",
      "--allow-principal",
      "User:ANONYMOUS",
      "--operation",
      "Describe",
      "--topic",
      "described"
    ])
    const topics = await Wait.eventually("described gone from kcat -L", async () => {
      const t = await metadataTopics()
      return t.includes("described") ? undefined : t
    })
    expect(topics).toContain("open-1")
    expect((await acls(["--list", "--topic", "described"])).stdout).not.toContain("operation=DESCRIBE")
  }, 120_000)

  it("our CLI manages ClusterMirror ACLs (--cluster-mirror) and the others like kafka-acls", async () => {
    const acl = (args: ReadonlyArray<string>) => cli(["acls", "--bootstrap-server", bootstrap, ...args])
    const add = await acl([
      "--add",
      "--allow-principal",
      "User:ops",
      "--operation",
      "Alter",
      "--operation",
      "Describe",
      "--cluster-mirror",
      "*"
    ])
    expect(add.stderr).toBe("")
    expect(add.code).toBe(0)
    expect(add.stdout).toContain(
      "Adding ACLs for resource `ResourcePattern(resourceType=CLUSTER_MIRROR, name=*, patternType=LITERAL)`"
    )
    const listed = await acl(["--list", "--cluster-mirror", "*"])
    expect(listed.code).toBe(0)
    expect(listed.stdout).toContain("(principal=User:ops, host=*, operation=ALTER, permissionType=ALLOW)")
    expect(listed.stdout).toContain("(principal=User:ops, host=*, operation=DESCRIBE, permissionType=ALLOW)")
    // READ is not an operation of a cluster mirror (KIP-1279 §8.1).
    const bad = await acl(["--add", "--allow-principal", "User:ops", "--operation", "Read", "--cluster-mirror", "m"])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain("READ is not valid for --cluster-mirror")
    // Kafka's own kafka-acls (4.4, before KIP-1279) still lists everything with mirror ACLs present.
    const java = (await acls(["--list"])).stdout
    expect(java).toContain("(principal=User:ops, host=*, operation=ALTER, permissionType=ALLOW)")
    const topic = await acl(["--list", "--topic", "open-", "--resource-pattern-type", "prefixed"])
    expect(topic.stdout).toContain("(principal=User:ANONYMOUS, host=*, operation=ALL, permissionType=ALLOW)")
    const removed = await acl(["--remove", "--force", "--cluster-mirror", "*"])
    expect(removed.code).toBe(0)
    expect(removed.stdout).toContain(
      "Removed ACLs for resource `ResourcePattern(resourceType=CLUSTER_MIRROR, name=*, patternType=LITERAL)`"
    )
    const after = await Wait.eventually("the mirror ACLs removed", async () => {
      const r = await acl(["--list", "--cluster-mirror", "*"])
      return r.stdout.includes("User:ops") ? undefined : r
    })
    expect(after.code).toBe(0)
  }, 120_000)
})
