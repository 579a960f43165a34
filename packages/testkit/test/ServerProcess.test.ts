import { describe, expect, it } from "@effect/vitest"
import * as ServerProcess from "../src/ServerProcess.js"

describe("ServerProcess", () => {
  it("finds every listening line's port, in order", () => {
    const out = [
      "[2025-01-01T00:00:00.000Z] clustermirror controller 0 listening on 127.0.0.1:40001",
      "noise",
      "[2025-01-01T00:00:00.001Z] clustermirror broker 1 (cluster x) listening on 127.0.0.1:40002",
      "broker 2 listening on localhost:40003"
    ].join("\n")
    expect(ServerProcess.listeningPorts(out)).toEqual([40001, 40002, 40003])
  })

  it("builds the command line from generated flags followed by extra arguments", () => {
    expect(
      ServerProcess.commandLine({
        command: "server",
        port: 9092,
        dataDir: "/d",
        configFile: "/c.properties",
        args: ["--embedded", "3"],
        nodeArgs: ["--cpu-prof"]
      })
    ).toEqual([
      "--cpu-prof",
      "--import",
      "tsx",
      "src/main.ts",
      "server",
      "--port",
      "9092",
      "--data-dir",
      "/d",
      "--config",
      "/c.properties",
      "--embedded",
      "3"
    ])
  })

  it("leaves out the flags that the config decides", () => {
    expect(
      ServerProcess.commandLine({
        command: "server",
        port: undefined,
        dataDir: undefined,
        configFile: "/roles.properties",
        args: [],
        nodeArgs: []
      })
    ).toEqual(["--import", "tsx", "src/main.ts", "server", "--config", "/roles.properties"])
  })
})
