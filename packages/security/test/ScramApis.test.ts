import { describe, expect, it } from "@effect/vitest"
import { MetadataDelta, MetadataImage } from "@clustermirror/metadata-log"
import { Errors, MetadataRecords } from "@clustermirror/protocol"
import * as ScramApis from "../src/ScramApis.js"

const credential = (name: string, mechanism: number, iterations: number) =>
  MetadataRecords.make("UserScramCredentialRecord", {
    name,
    mechanism,
    salt: Buffer.from("salt"),
    storedKey: Buffer.from("stored-key"),
    serverKey: Buffer.from("server-key"),
    iterations
  })

const image = MetadataDelta.make(MetadataImage.empty, [
  credential("alice", 2, 8192),
  credential("alice", 1, 4096),
  credential("bob", 1, 4096)
]).apply(MetadataImage.empty.provenance)

describe("ScramApis.describe", () => {
  it("describes every user's mechanisms and iterations, never salts or keys", () => {
    const all = ScramApis.describe(image, { users: null })
    expect(all.results).toEqual([
      {
        user: "alice",
        errorCode: 0,
        errorMessage: null,
        credentialInfos: [
          { mechanism: 1, iterations: 4096 },
          { mechanism: 2, iterations: 8192 }
        ]
      },
      { user: "bob", errorCode: 0, errorMessage: null, credentialInfos: [{ mechanism: 1, iterations: 4096 }] }
    ])
    expect(JSON.stringify(all)).not.toContain("key")
    expect(ScramApis.describe(image, { users: [] }).results).toHaveLength(2)
  })

  it("answers RESOURCE_NOT_FOUND for an unknown user and DUPLICATE_RESOURCE for a user named twice", () => {
    expect(ScramApis.describe(image, { users: [{ name: "carol" }, { name: "bob" }, { name: "bob" }] }).results).toEqual(
      [
        {
          user: "carol",
          errorCode: Errors.ErrorCode.RESOURCE_NOT_FOUND,
          errorMessage: "Attempt to describe a user credential that does not exist: carol",
          credentialInfos: []
        },
        {
          user: "bob",
          errorCode: Errors.ErrorCode.DUPLICATE_RESOURCE,
          errorMessage: "Cannot describe SCRAM credentials for the same user twice in a single request: bob",
          credentialInfos: []
        }
      ]
    )
  })
})
