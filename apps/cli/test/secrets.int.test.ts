/**
 * No secret leaves the cluster: a mirror created with a SASL password and a trust store password (the
 * store made by `openssl`, read by the broker that connects), started on a topic so that its partitions
 * try the source with those settings, is then described over the wire (DescribeConfigs,
 * DescribeClusterMirrors), by the command as text and as JSON (configs, partitions, failed partitions,
 * list), altered and created again with bad settings that carry further secrets, and used with a
 * `--command-config` holding one more. None of the secrets appears in any answer, any output of the
 * command, or anything the servers logged.
 */
import { ClusterClient } from "@clustermirror/client"
import {
  CreateTopics,
  DescribeClusterMirrors,
  DescribeConfigs,
  IncrementalAlterConfigs,
  StartMirrorTopics
} from "@clustermirror/protocol"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { ServerProcess } from "@clustermirror/testkit"
import { execFile, execFileSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const appDir = fileURLToPath(new URL("..", import.meta.url))

interface Run {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

const cli = (args: ReadonlyArray<string>): Promise<Run> =>
  new Promise((resolve) => {
    execFile(
      process.execPath,
      ["--import", "tsx", "src/main.ts", ...args],
      { cwd: appDir, timeout: 60_000 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : -1
        resolve({ code, stdout, stderr })
      }
    )
  })

/** Every secret of the test: none may appear anywhere. */
const SECRETS = {
  jaas: "jaas-Pa55word-9f3e",
  truststore: "trust-Pa55word-71ab",
  altered: "altered-Pa55word-c0de",
  refusedCreate: "refused-Pa55word-beef",
  commandConfig: "command-Pa55word-d00d"
} as const

const scram = (password: string) =>
  `org.apache.kafka.common.security.scram.ScramLoginModule required username="mirror" password="${password}";`

describe("secrets of a mirror's connection", () => {
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "cm-secrets-"))
  const logFile = path.join(scratch, "servers.log")
  let destination: ServerProcess.ServerHandle | undefined
  let source: ServerProcess.ServerHandle | undefined
  let dst: ClusterClient.Client | undefined
  let src: ClusterClient.Client | undefined
  /** Everything the test saw: outputs of the command, answers on the wire. */
  const seen: Array<string> = []
  const mirrors = async (...args: ReadonlyArray<string>) => {
    const run = await cli(["--bootstrap-server", destination!.bootstrap, ...args])
    seen.push(`$ ${args.join(" ")}\n${run.stdout}\n${run.stderr}`)
    return run
  }

  beforeAll(async () => {
    ;[destination, source] = await Promise.all([
      ServerProcess.start({ tempPrefix: "cm-secrets-dst-", logFile }),
      ServerProcess.start({ tempPrefix: "cm-secrets-src-", logFile })
    ])
    dst = new ClusterClient.Client({ bootstrapServers: [destination.bootstrap] })
    src = new ClusterClient.Client({ bootstrapServers: [source.bootstrap] })
    const created = await src.sendToAnyBroker(CreateTopics.api, {
      topics: [{ name: "payments", numPartitions: 2, replicationFactor: 1, assignments: [], configs: [] }],
      timeoutMs: 10_000,
      validateOnly: false
    })
    expect(created.topics.map((t) => t.errorCode)).toEqual([0])
    const days = ["-days", "2"]
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-subj",
        "/CN=source-ca",
        "-keyout",
        path.join(scratch, "ca.key"),
        "-out",
        path.join(scratch, "ca.pem"),
        ...days
      ],
      { stdio: "ignore" }
    )
    execFileSync(
      "openssl",
      [
        "pkcs12",
        "-export",
        "-nokeys",
        "-in",
        path.join(scratch, "ca.pem"),
        "-out",
        path.join(scratch, "truststore.p12"),
        "-passout",
        `pass:${SECRETS.truststore}`
      ],
      { stdio: "ignore" }
    )
  })
  afterAll(async () => {
    await dst?.close()
    await src?.close()
    await destination?.stop()
    await source?.stop()
    fs.rmSync(scratch, { recursive: true, force: true })
  })

  it("appears in no describe, status, command output, error or log line", async () => {
    const sourceClusterId = (await src!.metadata([])).clusterId!
    const mirrorConfig = path.join(scratch, "secure.properties")
    fs.writeFileSync(
      mirrorConfig,
      [
        `bootstrap.servers=${source!.bootstrap}`,
        `mirror.source.cluster.id=${sourceClusterId}`,
        "security.protocol=SASL_SSL",
        "sasl.mechanism=SCRAM-SHA-512",
        `sasl.jaas.config=${scram(SECRETS.jaas)}`,
        "ssl.truststore.type=PKCS12",
        `ssl.truststore.location=${path.join(scratch, "truststore.p12")}`,
        `ssl.truststore.password=${SECRETS.truststore}`,
        "ssl.endpoint.identification.algorithm=",
        // Partitions that cannot reach the source fail after a second; the refresh runs twice a second.
        "request.timeout.ms=1000",
        "mirror.metadata.refresh.interval.ms=500",
        ""
      ].join("\n")
    )
    expect(await mirrors("--create", "--mirror", "secure", "--mirror-config", mirrorConfig)).toMatchObject({
      code: 0,
      stdout: "Created mirror secure.\n"
    })

    // Start with the source's topic id, so that the destination creates the partitions and their
    // fetchers connect with the mirror's settings. The command itself cannot ask the source: the
    // cluster does not give it the secrets.
    const sourceTopic = (await src!.metadata(["payments"])).topics.get("payments")!
    const started = await dst!.sendToAnyBroker(StartMirrorTopics.api, {
      mirrorName: "secure",
      topics: [{ topicName: "payments", topicId: sourceTopic.topicId, numPartitions: 2 }],
      includePatterns: [],
      excludePatterns: []
    })
    seen.push(JSON.stringify(started))
    expect(started.topics.map((t) => [t.name, t.errorCode])).toEqual([["payments", 0]])
    const viaCommand = await mirrors("--start", "--mirror", "secure", "--topics", "orders")
    expect(viaCommand.code).toBe(1)
    expect(viaCommand.stderr).toContain(
      "mirror secure connects over SASL_SSL with secrets the cluster does not return (sasl.jaas.config, ssl.truststore.password), so this client cannot connect to the source itself"
    )

    // The partitions try the source with the mirror's settings and fail on the connection.
    type Row = { state: string; partition: number; errorMessage: string | null }
    let rows: Array<Row> = []
    for (let i = 0; i < 200; i++) {
      const d = await mirrors("--describe", "--mirror", "secure", "--json")
      rows = d.code === 0 ? (JSON.parse(d.stdout) as Array<Row>) : []
      if (rows.length === 2 && rows.every((r) => r.state === "FAILED")) break
      await new Promise((r) => setTimeout(r, 100))
    }
    expect(rows.map((r) => [r.partition, r.state])).toEqual([
      [0, "FAILED"],
      [1, "FAILED"]
    ])
    for (const r of rows) expect(r.errorMessage).toContain(`127.0.0.1:${source!.port}`)
    // Text too (the partitions retry and fail again, so which of them --failed shows varies).
    expect((await mirrors("--describe", "--mirror", "secure")).code).toBe(0)
    expect((await mirrors("--describe", "--failed")).code).toBe(0)
    expect((await mirrors("--list")).stdout).toContain("secure")

    // Its configs, as text and JSON: the secrets are sensitive, without a value.
    const text = await mirrors("--describe", "--configs", "--mirror", "secure")
    expect(text.code).toBe(0)
    expect(text.stdout).toContain("  sasl.jaas.config=null sensitive=true\n")
    expect(text.stdout).toContain("  ssl.truststore.password=null sensitive=true\n")
    expect(text.stdout).toContain("  security.protocol=SASL_SSL sensitive=false\n")
    const json = await mirrors("--describe", "--configs", "--mirror", "secure", "--json")
    const entries = JSON.parse(json.stdout) as Array<{ name: string; value: string | null; sensitive: boolean }>
    expect(entries.filter((e) => e.sensitive).map((e) => [e.name, e.value])).toEqual([
      ["sasl.jaas.config", null],
      ["ssl.truststore.password", null]
    ])

    // On the wire.
    const configs = await dst!.sendToAnyBroker(DescribeConfigs.api, {
      resources: [{ resourceType: 64, resourceName: "secure", configurationKeys: null }],
      includeSynonyms: true,
      includeDocumentation: true
    })
    seen.push(JSON.stringify(configs))
    expect(configs.results[0]!.configs.filter((c) => c.isSensitive).map((c) => [c.name, c.value])).toEqual([
      ["sasl.jaas.config", null],
      ["ssl.truststore.password", null]
    ])
    const status = await dst!.sendToAnyBroker(DescribeClusterMirrors.api, {
      mirrorNames: ["secure"],
      includeAuthorizedOperations: false,
      clusterId: null,
      lastMirrorEpochLookups: []
    })
    seen.push(JSON.stringify(status, (_k, v) => (typeof v === "bigint" ? v.toString() : v)))
    expect(status.mirrors.map((m) => m.errorCode)).toEqual([0])

    // Refusals name the key, never the value of a secret.
    const altered = await dst!.sendToAnyBroker(IncrementalAlterConfigs.api, {
      resources: [
        {
          resourceType: 64,
          resourceName: "secure",
          configs: [
            {
              name: "sasl.jaas.config",
              configOperation: 0,
              value: scram(SECRETS.altered).replace("scram.Scram", "plain.Plain")
            }
          ]
        }
      ],
      validateOnly: false
    })
    seen.push(JSON.stringify(altered))
    expect(altered.responses.map((r) => [r.errorCode, r.errorMessage])).toEqual([
      [
        40,
        "Invalid value [hidden] for configuration sasl.jaas.config: the login module org.apache.kafka.common.security.plain.PlainLoginModule does not serve sasl.mechanism SCRAM-SHA-512: use org.apache.kafka.common.security.scram.ScramLoginModule"
      ]
    ])
    const badConfig = path.join(scratch, "bad.properties")
    fs.writeFileSync(
      badConfig,
      `bootstrap.servers=${source!.bootstrap}\nmirror.source.cluster.id=${sourceClusterId}\nsecurity.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config=${scram(SECRETS.refusedCreate)}\n`
    )
    const refused = await mirrors("--create", "--mirror", "bad", "--mirror-config", badConfig)
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain("INVALID_CONFIG")
    expect(refused.stderr).toContain("Invalid value [hidden] for configuration sasl.jaas.config")

    // The command's own connection: a SASL --command-config against this PLAINTEXT listener fails, saying how, not with what.
    const commandConfig = path.join(scratch, "admin.properties")
    fs.writeFileSync(
      commandConfig,
      `security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\nsasl.jaas.config=${scram(SECRETS.commandConfig)}\n`
    )
    const secured = await mirrors("--command-config", commandConfig, "--list")
    expect(secured.code).toBe(1)
    expect(secured.stderr).toContain("(connecting with security.protocol SASL_PLAINTEXT)")
    expect(secured.stderr).toContain("ILLEGAL_SASL_STATE: the broker's listener does not take SASL")

    await destination!.stop()
    await source!.stop()
    destination = undefined
    source = undefined
    const logged = fs.readFileSync(logFile, "utf8")
    // The destination logged the failed connections (so the check below looks at real lines).
    expect(logged).toContain("mirror secure: cluster_id sync error: describing the source cluster: ")
    expect(logged).toMatch(/mirror partition payments-\d FAILED/)
    for (const secret of Object.values(SECRETS)) {
      expect(logged).not.toContain(secret)
      for (const s of seen) expect(s).not.toContain(secret)
    }
  })

  it("a PLAINTEXT --command-config with the client's own settings works end to end", async () => {
    const restarted = await ServerProcess.start({ tempPrefix: "cm-secrets-plain-" })
    try {
      const commandConfig = path.join(scratch, "plain.properties")
      fs.writeFileSync(commandConfig, "security.protocol=PLAINTEXT\nclient.id=ops\nrequest.timeout.ms=10000\n")
      const listed = await cli(["--bootstrap-server", restarted.bootstrap, "--command-config", commandConfig, "--list"])
      expect(listed).toEqual({ code: 0, stdout: "No mirrors found\n", stderr: "" })
      fs.writeFileSync(commandConfig, "security.protocol=PLAINTEXT\nssl.truststore.location=/ca.pem\n")
      const refused = await cli([
        "--bootstrap-server",
        restarted.bootstrap,
        "--command-config",
        commandConfig,
        "--list"
      ])
      expect(refused).toMatchObject({
        code: 2,
        stderr: `invalid ssl.truststore.location in ${commandConfig}: is a TLS setting, and security.protocol PLAINTEXT does not use TLS (SSL or SASL_SSL do)\n`
      })
    } finally {
      await restarted.stop()
    }
  })

  it("a SASL_PLAINTEXT --command-config (PLAIN) connects the command; a wrong password fails without showing it", async () => {
    const password = "admin-Pa55word-5a51"
    const wrong = "wrong-Pa55word-0bad"
    const plain = (pw: string) =>
      `org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="${pw}";`
    const secured = await ServerProcess.start({
      tempPrefix: "cm-secrets-sasl-",
      config: {
        ...ServerProcess.TEST_DEFAULTS,
        listeners: "SASL_PLAINTEXT://127.0.0.1:9092",
        "sasl.enabled.mechanisms": "PLAIN",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": `${plain(password).slice(0, -1)} user_admin="${password}";`
      }
    })
    try {
      const commandConfig = path.join(scratch, "sasl.properties")
      const write = (pw: string) =>
        fs.writeFileSync(
          commandConfig,
          `security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config=${plain(pw)}\n`
        )
      const run = (...args: ReadonlyArray<string>) =>
        cli(["--bootstrap-server", secured.bootstrap, "--command-config", commandConfig, ...args])
      write(password)
      expect(await run("--list")).toEqual({ code: 0, stdout: "No mirrors found\n", stderr: "" })
      // Without the command config the SASL listener does not answer the command.
      const bare = await cli(["--bootstrap-server", secured.bootstrap, "--list"])
      expect(bare.code).toBe(1)
      write(wrong)
      const refused = await run("--list")
      expect(refused.code).toBe(1)
      expect(refused.stderr).toContain("SASL_AUTHENTICATION_FAILED")
      for (const secret of [password, wrong]) expect(refused.stdout + refused.stderr).not.toContain(secret)
    } finally {
      await secured.stop()
    }
  })
})
