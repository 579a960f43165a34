/**
 * `clustermirror-mirrors` as a process against our server as a process, with a second server as the
 * source cluster: create from a properties file, start a topic (its id and partition count come from
 * the source), list, describe (also as JSON), pause and resume, stop, delete, and a refused request's exit
 * code and Kafka error name.
 */
import { ClusterClient } from "@clustermirror/client"
import { CreateTopics } from "@clustermirror/protocol"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Ports, ServerProcess } from "@clustermirror/testkit"
import { execFile } from "node:child_process"
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

describe("clustermirror-mirrors", () => {
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "cm-cli-"))
  let destination: ServerProcess.ServerHandle
  let source: ServerProcess.ServerHandle
  let dst: ClusterClient.Client
  let src: ClusterClient.Client
  const mirrors = (...args: ReadonlyArray<string>) => cli(["--bootstrap-server", destination.bootstrap, ...args])

  beforeAll(async () => {
    ;[destination, source] = await Promise.all([
      ServerProcess.start({ tempPrefix: "cm-cli-dst-" }),
      ServerProcess.start({ tempPrefix: "cm-cli-src-" })
    ])
    dst = new ClusterClient.Client({ bootstrapServers: [destination.bootstrap] })
    src = new ClusterClient.Client({ bootstrapServers: [source.bootstrap] })
    const created = await src.sendToAnyBroker(CreateTopics.api, {
      topics: [{ name: "payments", numPartitions: 2, replicationFactor: 1, assignments: [], configs: [] }],
      timeoutMs: 10_000,
      validateOnly: false
    })
    expect(created.topics.map((t) => t.errorCode)).toEqual([0])
  })
  afterAll(async () => {
    await dst?.close()
    await src?.close()
    await destination?.stop()
    await source?.stop()
    fs.rmSync(scratch, { recursive: true, force: true })
  })

  it("creates, starts, lists, stops and deletes a mirror", async () => {
    const config = path.join(scratch, "mirror.properties")
    fs.writeFileSync(config, `# the source cluster\nbootstrap.servers=${source.bootstrap}\n`)
    const created = await mirrors("--create", "--mirror", "dr", "--mirror-config", config)
    expect(created).toMatchObject({ code: 0, stdout: "Created mirror dr.\n" })

    const started = await mirrors("--start", "--mirror", "dr", "--topics", "payments")
    expect(started.stderr).toBe("")
    expect(started).toMatchObject({ code: 0, stdout: "Started 1 mirror topic(s) in mirror dr: [payments]\n" })
    const sourceTopic = (await src.metadata(["payments"])).topics.get("payments")!
    let topic = (await dst.metadata(["payments"])).topics.get("payments")
    for (let i = 0; i < 100 && topic?.errorCode !== 0; i++) {
      await new Promise((r) => setTimeout(r, 50))
      topic = (await dst.metadata(["payments"])).topics.get("payments")
    }
    expect(topic?.topicId).toBe(sourceTopic.topicId)
    expect(topic?.partitions.size).toBe(2)

    const sourceClusterId = (await src.metadata([])).clusterId!
    // The broker answers from metadata it follows a moment behind the controller.
    let listed = await mirrors("--list")
    for (let i = 0; i < 50 && !listed.stdout.includes(sourceClusterId); i++) listed = await mirrors("--list")
    expect(listed.code).toBe(0)
    const lines = listed.stdout.trimEnd().split("\n")
    expect(lines[0]!.split(/\s+/)).toEqual(["MIRROR", "TOPICS", "SOURCE-CLUSTER-ID", "SOURCE-BOOTSTRAP-SERVER"])
    expect(lines.slice(1).map((l) => l.split(/\s+/))).toEqual([["dr", "1", sourceClusterId, source.bootstrap]])
    // `clustermirror mirrors ...` (the server app's command) is the same command.
    const viaServer = await new Promise<Run>((resolve) =>
      execFile(
        process.execPath,
        ["--import", "tsx", "src/main.ts", "mirrors", "--bootstrap-server", destination.bootstrap, "--list"],
        { cwd: fileURLToPath(new URL("../../server/", import.meta.url)), timeout: 60_000 },
        (error, stdout, stderr) =>
          resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : -1, stdout, stderr })
      )
    )
    expect(viaServer).toEqual(listed)

    // The partitions' actual states come from their leaders: wait for both to mirror.
    const describeUntil = async (state: string) => {
      for (let i = 0; i < 100; i++) {
        const d = await mirrors("--describe", "--mirror", "dr", "--json")
        const rows = d.code === 0 ? (JSON.parse(d.stdout) as Array<{ state: string; partition: number }>) : []
        if (rows.length === 2 && rows.every((r) => r.state === state)) return rows
        await new Promise((r) => setTimeout(r, 100))
      }
      throw new Error(`mirror dr never showed both partitions ${state}`)
    }
    const rows = await describeUntil("MIRRORING")
    expect(rows.map((r) => r.partition)).toEqual([0, 1])
    const table = await mirrors("--describe")
    expect(table.code).toBe(0)
    expect(
      table.stdout
        .split("\n")[0]!
        .split(/\s+/)
        .filter((c) => c !== "")
    ).toEqual(["MIRROR", "TOPIC", "PARTITION", "SOURCE-OFFSET", "DESTINATION-OFFSET", "LAG", "STATE"])
    expect(await mirrors("--describe", "--failed")).toMatchObject({ code: 0, stdout: "No failed partitions found\n" })

    const paused = await mirrors("--pause", "--mirror", "dr", "--topics", "payments")
    expect(paused.code).toBe(0)
    await describeUntil("PAUSED")
    // Resume continues from the log end, without truncation.
    expect((await mirrors("--resume", "--mirror", "dr", "--topics", "payments")).code).toBe(0)
    await describeUntil("MIRRORING")

    const stopped = await mirrors("--stop", "--mirror", "dr", "--topics", "payments")
    expect(stopped).toMatchObject({ code: 0, stdout: "Stopped mirroring for topics [payments] in mirror dr.\n" })
    await describeUntil("STOPPED")
    const deleted = await mirrors("--delete", "--mirror", "dr")
    expect(deleted).toMatchObject({ code: 0, stdout: "Deleted mirror dr.\n" })
    let empty = await mirrors("--list")
    for (let i = 0; i < 50 && empty.stdout !== "No mirrors found\n"; i++) empty = await mirrors("--list")
    expect(empty).toMatchObject({ code: 0, stdout: "No mirrors found\n" })
  })

  it("fails with the Kafka error name and a non-zero exit code", async () => {
    const unknown = await mirrors("--delete", "--mirror", "nowhere")
    expect(unknown.code).toBe(1)
    expect(unknown.stderr).toMatch(/^Error: UNKNOWN_CLUSTER_MIRROR: /)
    const usage = await mirrors("--start", "--mirror", "dr")
    expect(usage.code).toBe(2)
    expect(usage.stderr).toMatch(/--topics is required with --start/)
    const described = await mirrors("--describe", "--mirror", "nowhere")
    expect(described.code).toBe(1)
    expect(described.stderr).toMatch(/UNKNOWN_CLUSTER_MIRROR/)
  })

  it("says what it did when the source lacks a topic, a pattern matches nothing, or the source is unreachable", async () => {
    const config = path.join(scratch, "waiting.properties")
    fs.writeFileSync(config, `bootstrap.servers=${source.bootstrap}\n`)
    expect((await mirrors("--create", "--mirror", "waiting", "--mirror-config", config)).code).toBe(0)

    const absent = await mirrors("--start", "--mirror", "waiting", "--topics", "not-there-yet")
    expect(absent.code).toBe(0)
    expect(absent.stdout).not.toContain("Started")
    expect(absent.stdout).toContain(
      "Topic(s) [not-there-yet] do not exist on the source yet: recorded in mirror waiting's mirror.topics.include"
    )
    const none = await mirrors("--start", "--mirror", "waiting", "--topics", "nothing-matches-.*")
    expect(none).toMatchObject({
      code: 0,
      stdout: "No matching topics found yet. Patterns saved to mirror waiting for auto-discovery.\n"
    })

    const closed = await Ports.freePort()
    const wrong = path.join(scratch, "wrong.properties")
    fs.writeFileSync(wrong, `bootstrap.servers=127.0.0.1:${closed}\n`)
    const unreachable = await mirrors("--create", "--mirror", "wrong", "--mirror-config", wrong)
    expect(unreachable.code).toBe(1)
    expect(unreachable.stderr).toMatch(
      new RegExp(`cannot reach the source at 127\\.0\\.0\\.1:${closed}: .*ECONNREFUSED`)
    )
    expect(unreachable.stderr).not.toContain("mirror.source.cluster.id")

    const secured = path.join(scratch, "secured.properties")
    fs.writeFileSync(
      secured,
      `bootstrap.servers=${source.bootstrap}\nsecurity.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n`
    )
    const refused = await mirrors("--create", "--mirror", "secured", "--mirror-config", secured)
    expect(refused.code).toBe(1)
    expect(refused.stderr).toContain("INVALID_CONFIG")
    expect(refused.stderr).toContain("Invalid configuration sasl.jaas.config: must be set for SASL PLAIN")
  })
})
