/**
 * The Effect face of the cluster client without a network: a request body that does not fit its
 * message's Schema fails with `InvalidRequest` before any connection is tried.
 */
import { CreateClusterMirror, DescribeClusterMirrors } from "@clustermirror/protocol"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as ClusterClient from "../src/ClusterClient.js"

// Nothing listens on port 1: a request that got as far as connecting would fail with ConnectionError.
const offline = () =>
  ClusterClient.fromClient(
    new ClusterClient.Client({
      bootstrapServers: ["127.0.0.1:1"],
      retry: { attempts: 1, baseMs: 1, maxMs: 1, jitter: 0 }
    })
  )

describe("ClusterClient Effect face", () => {
  it.effect("refuses a body with a null where the field is not nullable, naming the field", () =>
    Effect.gen(function* () {
      const cc = offline()
      const error = yield* Effect.flip(
        cc.sendToAnyBroker(CreateClusterMirror.api, { mirrorName: null as unknown as string, config: [] })
      )
      expect(error).toMatchObject({ _tag: "InvalidRequest", api: "CreateClusterMirror", field: "mirrorName" })
      const toNode = yield* Effect.flip(
        cc.sendToNode(1, DescribeClusterMirrors.api, {
          lastMirrorEpochLookups: [{ topicId: "AAAAAAAAAAAAAAAAAAAAAQ", partitions: [2 ** 31] }]
        })
      )
      expect(toNode).toMatchObject({ _tag: "InvalidRequest", field: "lastMirrorEpochLookups[0].partitions[0]" })
      yield* Effect.promise(() => cc.client.close())
    })
  )
})
