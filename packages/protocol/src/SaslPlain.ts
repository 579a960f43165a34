/**
 * The SASL PLAIN message (RFC 4616): `[authzid] NUL authcid NUL passwd`, UTF-8. It owns the grammar only;
 * checking the password belongs to the server's callback. Errors never contain the password.
 */

export interface PlainMessage {
  readonly authzid: string
  readonly username: string
  readonly password: string
}

export const encode = (username: string, password: string, authzid = ""): Buffer =>
  Buffer.from(`${authzid}\u0000${username}\u0000${password}`, "utf8")

/** The message's parts, or why it is malformed (a message safe to log). */
export const decode = (bytes: Uint8Array): PlainMessage | { readonly _tag: "Invalid"; readonly message: string } => {
  const s = Buffer.from(bytes).toString("utf8")
  const parts = s.split("\u0000")
  if (parts.length !== 3) return { _tag: "Invalid", message: "Invalid SASL/PLAIN response: expected 3 tokens" }
  const [authzid, username, password] = parts as [string, string, string]
  if (username.length === 0) return { _tag: "Invalid", message: "Authentication failed: username not specified" }
  if (password.length === 0) return { _tag: "Invalid", message: "Authentication failed: password not specified" }
  return { authzid, username, password }
}
