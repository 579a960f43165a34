/**
 * The broker's SCRAM credential APIs: DescribeUserScramCredentials answers from this broker's metadata
 * image (mechanisms and iteration counts only, never salts or keys); AlterUserScramCredentials is
 * forwarded to the controller by the caller, like every metadata write.
 */
import type { MetadataImage } from "@clustermirror/metadata-log"
import { DescribeUserScramCredentials, Errors } from "@clustermirror/protocol"
import type { Handlers } from "@clustermirror/network/RequestChannel"

type Result = DescribeUserScramCredentials.Response["results"][number]

/**
 * DescribeUserScramCredentials (50): every user with a credential when `users` is null or empty, else
 * each named user once: RESOURCE_NOT_FOUND for a user without credentials, DUPLICATE_RESOURCE for a
 * user named twice.
 */
export const describe = (
  image: MetadataImage.MetadataImage,
  request: DescribeUserScramCredentials.Request
): DescribeUserScramCredentials.Response => {
  const named = request.users === null || request.users.length === 0 ? null : request.users.map((u) => u.name)
  const users = new Map<string, boolean>()
  for (const name of named ?? [...image.scram.keys()]) users.set(name, users.has(name))
  const results: Result[] = []
  for (const [user, duplicate] of users) {
    if (duplicate) {
      results.push({
        user,
        errorCode: Errors.ErrorCode.DUPLICATE_RESOURCE,
        errorMessage: `Cannot describe SCRAM credentials for the same user twice in a single request: ${user}`,
        credentialInfos: []
      })
      continue
    }
    const creds = image.scram.get(user)
    if (creds === undefined || creds.size === 0)
      results.push({
        user,
        errorCode: Errors.ErrorCode.RESOURCE_NOT_FOUND,
        errorMessage: `Attempt to describe a user credential that does not exist: ${user}`,
        credentialInfos: []
      })
    else
      results.push({
        user,
        errorCode: 0,
        errorMessage: null,
        credentialInfos: [...creds]
          .sort(([a], [b]) => a - b)
          .map(([mechanism, c]) => ({ mechanism, iterations: c.iterations }))
      })
  }
  return { throttleTimeMs: 0, errorCode: 0, errorMessage: null, results }
}

export const register = (handlers: Handlers, image: () => MetadataImage.MetadataImage): Handlers =>
  handlers.register(DescribeUserScramCredentials.api, (_ctx, request) => describe(image(), request))
