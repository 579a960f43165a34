/**
 * Kafka's LeaderChange control record (control type 2), the first record a KRaft leader writes in
 * its epoch.
 *
 * LeaderChangeMessage v0, flexible => Version:int16 LeaderId:int32 [Voters: VoterId:int32]
 *   [GrantingVoters: VoterId:int32] tagged fields
 */
import { ControlRecord, Spec as S } from "@clustermirror/protocol"
import type { RaftMessages } from "@clustermirror/raft"
import { Either } from "effect"
import type { Buffer } from "node:buffer"

export const LEADER_CHANGE = 2

const Message = S.message({
  name: "LeaderChangeMessage",
  type: "data",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [
    S.int16("Version"),
    S.int32("LeaderId"),
    S.array("Voters", [S.int32("VoterId")]),
    S.array("GrantingVoters", [S.int32("VoterId")])
  ]
})

export const key = (): Buffer => ControlRecord.encodeKey(LEADER_CHANGE)

export const encode = (m: RaftMessages.LeaderChangeMessage): Buffer =>
  Either.getOrThrowWith(
    Message.encode(0, {
      version: 0,
      leaderId: m.leaderId,
      voters: m.voters.map((voterId) => ({ voterId })),
      grantingVoters: m.grantingVoters.map((voterId) => ({ voterId }))
    }),
    (e) => e
  )

export const decode = (bytes: Uint8Array): Either.Either<RaftMessages.LeaderChangeMessage, string> =>
  Either.mapBoth(Message.decode(0, bytes), {
    onLeft: (e) => e.message,
    onRight: (m) => ({
      leaderId: m.leaderId,
      voters: m.voters.map((v) => v.voterId),
      grantingVoters: m.grantingVoters.map((v) => v.voterId)
    })
  })
