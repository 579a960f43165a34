/**
 * Users' SCRAM credentials (Kafka's `ScramControlManager`): AlterUserScramCredentials turns salted
 * passwords into UserScramCredentialRecord (salt, stored key, server key, iterations, as RFC 5802
 * stores them) and deletions into RemoveUserScramCredentialRecord. Owns the SCRAM slice of the
 * controller state.
 *
 * Decide is pure and returns the records with a per-user result; `replay` is the only way the state
 * changes. Salts and keys are never part of a response.
 */
import { type AlterUserScramCredentials, Errors, MetadataRecords, Scram } from "@clustermirror/protocol"
import * as ControllerResult from "./ControllerResult.js"

export interface Credential {
  readonly salt: Uint8Array
  readonly storedKey: Uint8Array
  readonly serverKey: Uint8Array
  readonly iterations: number
}

export interface State {
  /** By user name, then mechanism id (1 SCRAM-SHA-256, 2 SCRAM-SHA-512). */
  readonly users: ReadonlyMap<string, ReadonlyMap<number, Credential>>
}

export const empty: State = { users: new Map() }

export type ScramRecord = MetadataRecords.MetadataRecordOf<
  "UserScramCredentialRecord" | "RemoveUserScramCredentialRecord"
>

export const credential = (state: State, user: string, mechanism: number): Credential | undefined =>
  state.users.get(user)?.get(mechanism)

/** Applies a credential record. Dies when a removal names a credential that does not exist. */
export const replay = (state: State, record: ScramRecord): State => {
  const { name, mechanism } = record.data
  const users = new Map(state.users)
  const creds = new Map(users.get(name) ?? [])
  if (record.type === "UserScramCredentialRecord") {
    const { salt, storedKey, serverKey, iterations } = record.data
    creds.set(mechanism, { salt, storedKey, serverKey, iterations })
  } else {
    if (!creds.delete(mechanism))
      throw new Error(`RemoveUserScramCredentialRecord: no credential of mechanism ${mechanism} for user ${name}`)
  }
  if (creds.size === 0) users.delete(name)
  else users.set(name, creds)
  return { users }
}

export interface UserResult {
  readonly user: string
  readonly errorCode: number
  readonly errorMessage: string | null
}

const failure = (user: string, errorCode: number, errorMessage: string): UserResult => ({
  user,
  errorCode,
  errorMessage
})

const validateUser = (name: string, mechanism: number): UserResult | undefined => {
  if (name.length === 0) return failure(name, Errors.ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty")
  if (Scram.mechanismById(mechanism) === undefined)
    return failure(name, Errors.ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism")
  return undefined
}

/**
 * AlterUserScramCredentials (51): one result per user named in the request, in request order. A user
 * named twice (in deletions, upsertions or both) gets DUPLICATE_RESOURCE and none of its changes apply;
 * an empty name UNACCEPTABLE_CREDENTIAL; an unknown mechanism UNSUPPORTED_SASL_MECHANISM; iterations
 * outside [4096, 16384] UNACCEPTABLE_CREDENTIAL; deleting an absent credential RESOURCE_NOT_FOUND. Emits
 * a RemoveUserScramCredentialRecord per accepted deletion, then a UserScramCredentialRecord per accepted
 * upsertion.
 */
export const alterUserScramCredentials = (
  state: State,
  request: AlterUserScramCredentials.Request
): ControllerResult.ControllerResult<ReadonlyArray<UserResult>> => {
  const count = new Map<string, number>()
  for (const u of [...request.deletions, ...request.upsertions]) count.set(u.name, (count.get(u.name) ?? 0) + 1)
  const results = new Map<string, UserResult>()
  const deletions: Array<MetadataRecords.MetadataRecord> = []
  const upsertions: Array<MetadataRecords.MetadataRecord> = []
  const duplicate = (name: string) =>
    failure(name, Errors.ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request")
  for (const d of request.deletions) {
    if (results.has(d.name)) continue
    const error =
      (count.get(d.name)! > 1 ? duplicate(d.name) : undefined) ??
      validateUser(d.name, d.mechanism) ??
      (credential(state, d.name, d.mechanism) === undefined
        ? failure(
            d.name,
            Errors.ErrorCode.RESOURCE_NOT_FOUND,
            "Attempt to delete a user credential that does not exist"
          )
        : undefined)
    if (error !== undefined) results.set(d.name, error)
    else {
      results.set(d.name, { user: d.name, errorCode: 0, errorMessage: null })
      deletions.push(MetadataRecords.make("RemoveUserScramCredentialRecord", { name: d.name, mechanism: d.mechanism }))
    }
  }
  for (const u of request.upsertions) {
    if (results.has(u.name)) continue
    const error =
      (count.get(u.name)! > 1 ? duplicate(u.name) : undefined) ??
      validateUser(u.name, u.mechanism) ??
      (u.iterations < Scram.MIN_ITERATIONS
        ? failure(u.name, Errors.ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations")
        : u.iterations > Scram.MAX_ITERATIONS
          ? failure(u.name, Errors.ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations")
          : undefined)
    if (error !== undefined) {
      results.set(u.name, error)
      continue
    }
    const mechanism = Scram.mechanismById(u.mechanism)!
    const c = Scram.credentialFromSaltedPassword(mechanism, u.salt, u.saltedPassword, u.iterations)
    results.set(u.name, { user: u.name, errorCode: 0, errorMessage: null })
    upsertions.push(
      MetadataRecords.make("UserScramCredentialRecord", {
        name: u.name,
        mechanism: u.mechanism,
        salt: Buffer.from(c.salt),
        storedKey: c.storedKey,
        serverKey: c.serverKey,
        iterations: u.iterations
      })
    )
  }
  return ControllerResult.of([...deletions, ...upsertions], [...results.values()])
}
