import { existsSync } from "node:fs"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as JavaTools from "../src/JavaTools.js"
import * as ServerProcess from "../src/ServerProcess.js"

describe("ServerProcess", () => {
  it("starts our server on a free port; it serves kcat and Kafka's console consumer, survives a restart, and stop() cleans up", async () => {
    const server = await ServerProcess.start({ config: ServerProcess.TEST_DEFAULTS })
    try {
      expect(server.ports()).toEqual([server.port])
      expect(server.isAlive()).toBe(true)
      await server.kcat(["-P", "-t", "testkit-server"], { input: "one\ntwo\nthree\n" })

      const pidBefore = server.pid
      await server.restart()
      expect(server.pid).not.toBe(pidBefore)

      const read = await server.kcat(["-C", "-t", "testkit-server", "-e", "-q", "-f", "%s\\n"])
      expect(JavaTools.lines(read.stdout)).toEqual(["one", "two", "three"])
      const consumed = JavaTools.expectSuccess(
        "console-consumer",
        await JavaTools.consoleConsumer([
          "--bootstrap-server",
          server.bootstrap,
          "--topic",
          "testkit-server",
          "--from-beginning",
          "--max-messages",
          "3",
          "--timeout-ms",
          "30000"
        ])
      )
      expect(JavaTools.lines(consumed.stdout)).toEqual(["one", "two", "three"])
      expect(server.rssMb()).toBeGreaterThan(10)
      expect(server.cpuSeconds()).toBeGreaterThan(0)
    } finally {
      const exit = await server.stop()
      expect(exit.code).toBe(0)
    }
    expect(server.isAlive()).toBe(false)
    expect(server.peakRssMb()).toBeGreaterThan(10)
    expect(existsSync(server.scratchDir)).toBe(false)
  })

  it.scoped("a server that exits before it is ready fails with a PeerStartError quoting its output", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(ServerProcess.scoped({ args: ["--no-such-flag", "x"] }))
      expect(error._tag).toBe("PeerStartError")
      expect(error.output).toMatch(/no-such-flag/)
    })
  )
})
