import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import * as Kraft from "../src/Kraft.js"

// Short quorum timeouts, so that a round takes about a second; the bench itself runs Kafka's.
const options: Kraft.Options = {
  ...Kraft.quick,
  rounds: 1,
  timeouts: {
    electionTimeoutMs: 300,
    fetchTimeoutMs: 600,
    electionBackoffMaxMs: 300,
    requestTimeoutMs: 600,
    fetchWaitMs: 10
  },
  waitMs: 15_000
}

const root = fs.mkdtempSync(path.join(os.tmpdir(), "kraft-bench-"))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))

describe("kraft bench on 3 voter processes", () => {
  it("moves the leadership after SIGKILL and after SIGSTOP of the leader, and commits under the new leader", async () => {
    const rounds = await Kraft.failover(options, root)
    expect(rounds.map((r) => r.signal)).toEqual(["SIGKILL", "SIGSTOP"])
    for (const r of rounds) {
      expect(r.newLeader).not.toBe(r.oldLeader)
      expect(r.newEpoch).toBeGreaterThan(r.oldEpoch)
      expect(r.committedMs).toBeGreaterThanOrEqual(r.electedMs)
    }
    // The SIGSTOP round starts from a quorum whose killed voter was restarted and caught up.
    expect(rounds[1]!.oldEpoch).toBeGreaterThanOrEqual(rounds[0]!.newEpoch)
    expect(Kraft.summarizeFailover(rounds, "SIGKILL").elected.count).toBe(1)
    // Every voter's directory holds its metadata log.
    for (const id of [1, 2, 3]) expect(fs.existsSync(path.join(root, `voter-${id}`, "__cluster_metadata-0"))).toBe(true)
  })
})
