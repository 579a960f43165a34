import { describe, expect, it } from "@effect/vitest"
import { MetadataLog } from "@clustermirror/metadata-log"
import { Errors, MetadataRecords, Scram } from "@clustermirror/protocol"
import { Effect } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { bootstrap, given } from "../src/ControllerTest.js"
import { QuorumController } from "../src/QuorumController.js"
import * as ScramControl from "../src/ScramControl.js"
import { CLUSTER_ID } from "./clusterFixtures.js"

const E = Errors.ErrorCode
const SHA256 = 1
const SHA512 = 2
const salt = Buffer.from("W22ZaJ0SNY7soEsUEjb6gQ==", "base64")

const upsert = (name: string, mechanism = SHA256, iterations = 4096, password = "pencil") => {
  const m = Scram.mechanismById(mechanism) ?? "SCRAM-SHA-256"
  return {
    name,
    mechanism,
    iterations,
    salt,
    saltedPassword: Scram.saltedPassword(m, password, salt, Math.max(1, Math.min(iterations, 16384)))
  }
}

const credentialRecord = (name: string, mechanism: number, iterations: number, password: string) => {
  const m = Scram.mechanismById(mechanism)!
  const c = Scram.credentialFromPassword(m, password, salt, iterations)
  return MetadataRecords.make("UserScramCredentialRecord", {
    name,
    mechanism,
    salt,
    storedKey: c.storedKey,
    serverKey: c.serverKey,
    iterations
  })
}

const ok = (user: string) => ({ user, errorCode: E.NONE, errorMessage: null })

const alter = (deletions: Array<{ name: string; mechanism: number }>, upsertions: Array<ReturnType<typeof upsert>>) =>
  given(bootstrap).when((s) => ScramControl.alterUserScramCredentials(s.scram, { deletions, upsertions }))

describe("ScramControl.alterUserScramCredentials", () => {
  it("stores the stored key and server key derived from the salted password (RFC 7677's user)", () => {
    const after = alter([], [upsert("user")]).then([credentialRecord("user", SHA256, 4096, "pencil")], [ok("user")])
    const c = ScramControl.credential(after.state.scram, "user", SHA256)!
    // The server side of RFC 7677's exchange works from what was stored.
    const first = Scram.serverFirst(
      "SCRAM-SHA-256",
      "n,,n=user,r=rOprNGfwEbeRWgbNEkqO",
      () => c,
      "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
    )
    expect(Scram.isFailure(first)).toBe(false)
  })

  it("deletes an existing credential and refuses to delete an absent one", () => {
    given([...bootstrap, credentialRecord("alice", SHA512, 8192, "alice-secret")])
      .when((s) =>
        ScramControl.alterUserScramCredentials(s.scram, {
          deletions: [
            { name: "alice", mechanism: SHA512 },
            { name: "bob", mechanism: SHA512 }
          ],
          upsertions: []
        })
      )
      .then(
        [MetadataRecords.make("RemoveUserScramCredentialRecord", { name: "alice", mechanism: SHA512 })],
        [
          ok("alice"),
          {
            user: "bob",
            errorCode: E.RESOURCE_NOT_FOUND,
            errorMessage: "Attempt to delete a user credential that does not exist"
          }
        ]
      )
      .when((s) =>
        ScramControl.alterUserScramCredentials(s.scram, {
          deletions: [{ name: "alice", mechanism: SHA512 }],
          upsertions: []
        })
      )
      .then(
        [],
        [
          {
            user: "alice",
            errorCode: E.RESOURCE_NOT_FOUND,
            errorMessage: "Attempt to delete a user credential that does not exist"
          }
        ]
      )
  })

  it("refuses a user twice in one request, bad iterations, an empty name and an unknown mechanism", () => {
    alter(
      [{ name: "dup", mechanism: SHA256 }],
      [upsert("dup", SHA512), upsert("few", SHA256, 4095), upsert("many", SHA512, 16385), upsert(""), upsert("mech", 3)]
    ).then(
      [],
      [
        {
          user: "dup",
          errorCode: E.DUPLICATE_RESOURCE,
          errorMessage: "A user credential cannot be altered twice in the same request"
        },
        { user: "few", errorCode: E.UNACCEPTABLE_CREDENTIAL, errorMessage: "Too few iterations" },
        { user: "many", errorCode: E.UNACCEPTABLE_CREDENTIAL, errorMessage: "Too many iterations" },
        { user: "", errorCode: E.UNACCEPTABLE_CREDENTIAL, errorMessage: "Username must not be empty" },
        { user: "mech", errorCode: E.UNSUPPORTED_SASL_MECHANISM, errorMessage: "Unknown SCRAM mechanism" }
      ]
    )
  })

  it("accepts the iteration bounds themselves and keeps both mechanisms of a user", () => {
    const after = alter([], [upsert("a", SHA256, 4096), upsert("b", SHA512, 16384)]).outcome().after
    const next = after
      .when((s) =>
        ScramControl.alterUserScramCredentials(s.scram, { deletions: [], upsertions: [upsert("a", SHA512, 8192)] })
      )
      .outcome().after
    expect([...next.state.scram.users.get("a")!.keys()].sort()).toEqual([SHA256, SHA512])
    expect(ScramControl.credential(next.state.scram, "a", SHA512)?.iterations).toBe(8192)
  })

  it("replay dies on removing a credential that is not there", () => {
    expect(() =>
      given([...bootstrap, MetadataRecords.make("RemoveUserScramCredentialRecord", { name: "x", mechanism: SHA256 })])
    ).toThrow(/replay died/)
  })
})

describe("QuorumController SCRAM credentials across restarts", () => {
  const populate = async (c: QuorumController) => {
    const r = await c.alterUserScramCredentials({
      deletions: [],
      upsertions: [upsert("alice", SHA512, 8192, "alice-secret"), upsert("bob", SHA256, 4096, "bob-secret")]
    })
    expect(r).toEqual([ok("alice"), ok("bob")])
    expect(
      await c.alterUserScramCredentials({ deletions: [{ name: "bob", mechanism: SHA256 }], upsertions: [] })
    ).toEqual([ok("bob")])
  }

  const expectAliceOnly = (c: QuorumController) => {
    expect([...c.current.scram.users.keys()]).toEqual(["alice"])
    const stored = ScramControl.credential(c.current.scram, "alice", SHA512)!
    expect(stored.iterations).toBe(8192)
    const expected = Scram.credentialFromPassword("SCRAM-SHA-512", "alice-secret", salt, 8192)
    expect(Buffer.from(stored.storedKey).equals(Buffer.from(expected.storedKey))).toBe(true)
    expect(Buffer.from(stored.serverKey).equals(Buffer.from(expected.serverKey))).toBe(true)
  }

  it("a new cluster starts with the bootstrap credentials; a restart keeps the log's own", async () => {
    const log = MetadataLog.makeMemory()
    const lines: string[] = []
    const options = {
      nodeId: 1000,
      clusterId: CLUSTER_ID,
      log,
      log_: (l: string) => lines.push(l),
      bootstrapScramCredentials: [
        { mechanism: "SCRAM-SHA-512" as const, name: "broker", password: "broker-secret", iterations: 8192 },
        { mechanism: "SCRAM-SHA-256" as const, name: "broker", password: "broker-secret", iterations: 4096 }
      ]
    }
    const first = await QuorumController.open(options)
    const stored = ScramControl.credential(first.current.scram, "broker", SHA512)!
    expect(stored.iterations).toBe(8192)
    expect(ScramControl.credential(first.current.scram, "broker", SHA256)?.iterations).toBe(4096)
    // The server side of an exchange checks the password against what was stored.
    const client = Scram.clientStart("SCRAM-SHA-512", "broker", "broker-secret")
    const serverFirst = Scram.serverFirst("SCRAM-SHA-512", client.message, () => stored)
    if (Scram.isFailure(serverFirst)) throw new Error(serverFirst.message)
    const final = Scram.clientFinal(client.state, serverFirst.response)
    if (Scram.isFailure(final)) throw new Error(final.message)
    expect(Scram.isFailure(Scram.serverFinal(serverFirst.state, final.message))).toBe(false)
    await first.alterUserScramCredentials({ deletions: [{ name: "broker", mechanism: SHA256 }], upsertions: [] })
    await first.close()
    const second = await QuorumController.open(options)
    try {
      expect(ScramControl.credential(second.current.scram, "broker", SHA256)).toBeUndefined()
      expect(lines.some((l) => l.includes("the metadata log exists already"))).toBe(true)
      expect(lines.join("\n")).not.toContain("broker-secret")
    } finally {
      await second.close()
    }
  })

  it("a controller reopened from a snapshot has the credentials", async () => {
    const log = MetadataLog.makeMemory()
    const first = await QuorumController.open({ nodeId: 1000, clusterId: CLUSTER_ID, log })
    await populate(first)
    await first.close()
    expect((await Effect.runPromise(log.latestSnapshot))._tag).toBe("Some")
    const second = await QuorumController.open({ nodeId: 1000, clusterId: CLUSTER_ID, log })
    try {
      expectAliceOnly(second)
    } finally {
      await second.close()
    }
  })

  it("a controller reopened from its log alone (no snapshot) has the credentials", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "cm-scram-"))
    try {
      const log = await Effect.runPromise(MetadataLog.makeFile(path.join(dir, "live")))
      const first = await QuorumController.open({
        nodeId: 1000,
        clusterId: CLUSTER_ID,
        log,
        snapshotEveryRecords: 1_000_000
      })
      await populate(first)
      fs.cpSync(path.join(dir, "live"), path.join(dir, "crashed"), { recursive: true })
      await first.close()
      await Effect.runPromise(log.close)
      const reopened = await Effect.runPromise(MetadataLog.makeFile(path.join(dir, "crashed")))
      expect((await Effect.runPromise(reopened.latestSnapshot))._tag).toBe("None")
      const second = await QuorumController.open({ nodeId: 1000, clusterId: CLUSTER_ID, log: reopened })
      try {
        expectAliceOnly(second)
      } finally {
        await second.close()
        await Effect.runPromise(reopened.close)
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})
