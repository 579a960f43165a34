import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import * as JavaTools from "../src/JavaTools.js"
import * as Kcat from "../src/Kcat.js"
import * as ProcessCluster from "../src/ProcessCluster.js"
import * as Wait from "../src/Wait.js"

describe("ProcessCluster", () => {
  it("runs a controller and brokers as separate processes; a SIGKILLed broker restarts at its port with its data and one log file", async () => {
    const baseDir = mkdtempSync(join(tmpdir(), "clustermirror-process-cluster-"))
    const cluster = await ProcessCluster.start({
      name: "test",
      baseDir,
      brokers: 2,
      brokerConfig: { "auto.create.topics.enable": true, "num.partitions": 1, "default.replication.factor": 2 }
    })
    try {
      expect(cluster.nodes.map((n) => n.nodeId)).toEqual([ProcessCluster.CONTROLLER_NODE_ID, 1, 2])
      const metadata = async () => (await Kcat.kcat(["-b", cluster.bootstrap, "-L"], { timeoutMs: 30_000 })).stdout
      await Wait.eventually("2 brokers", async () => ((await metadata()).includes("2 brokers") ? true : undefined))
      await Kcat.kcat(["-b", cluster.bootstrap, "-P", "-t", "pc", "-X", "acks=all"], { input: "one\ntwo\n" })

      const broker = cluster.node(1)
      const pidBefore = broker.handle()?.pid
      const exit = await cluster.kill(1, "SIGKILL")
      expect(exit.signal).toBe("SIGKILL")
      expect(cluster.isAlive(1)).toBe(false)
      await cluster.start(1)
      expect(cluster.isAlive(1)).toBe(true)
      expect(broker.handle()?.pid).not.toBe(pidBefore)
      expect(broker.handle()?.port).toBe(broker.port)

      const read = await Kcat.kcat(["-b", `127.0.0.1:${broker.port}`, "-C", "-t", "pc", "-e", "-q", "-f", "%s\\n"])
      expect(JavaTools.lines(read.stdout)).toEqual(["one", "two"])
      const log = readFileSync(broker.logFile, "utf8")
      expect(log.match(/ started ---/g)).toHaveLength(2)
      expect(log).toContain("signal SIGKILL")
    } finally {
      await cluster.stop()
      rmSync(baseDir, { recursive: true, force: true })
    }
  })
})
