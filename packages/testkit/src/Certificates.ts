/**
 * TLS test material made with `openssl` in a directory of the caller's (a temporary one): a CA, a
 * server certificate for `localhost` / `127.0.0.1` signed by it, client certificates signed by it, and
 * a client certificate from a second CA the first does not trust. Each identity is written as separate
 * PEM key and certificate files (what librdkafka takes), one PEM file with the key and the chain (Kafka's
 * PEM keystore file) and a PKCS12 keystore. Nothing here is ever checked in.
 */
import { execFileSync } from "node:child_process"
import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"

export interface Identity {
  /** The certificate's subject as given to openssl, e.g. `/OU=test/CN=client`. */
  readonly subject: string
  /** The unencrypted private key (PEM). */
  readonly keyFile: string
  /** The certificate (PEM). */
  readonly certFile: string
  /** Key then certificate and CA certificate, in one PEM file: `ssl.keystore.type=PEM`'s `ssl.keystore.location`. */
  readonly pemKeystore: string
  /** A PKCS12 keystore with the key and chain, protected by `password`. */
  readonly pkcs12Keystore: string
  readonly password: string
}

export interface Certificates {
  readonly dir: string
  /** The CA certificate (PEM): the truststore of every party. */
  readonly caFile: string
  /** The CA certificate in a PKCS12 truststore protected by `truststorePassword`. */
  readonly pkcs12Truststore: string
  readonly truststorePassword: string
  /** CN=localhost with subjectAltName IP:127.0.0.1 and DNS:localhost. */
  readonly server: Identity
  /** A client certificate with subject `CN=client,OU=test` (RFC 2253). */
  readonly client: Identity
  /** A client certificate signed by another CA, which `caFile` does not trust. */
  readonly untrustedClient: Identity
}

const openssl = (args: ReadonlyArray<string>, cwd: string): void => {
  execFileSync("openssl", args, { cwd, stdio: ["ignore", "ignore", "pipe"] })
}

const PASSWORD = "test-keystore-secret"

const identity = (
  dir: string,
  name: string,
  subject: string,
  ca: { readonly cert: string; readonly key: string },
  extensions: string | null
): Identity => {
  const keyFile = join(dir, `${name}.key`)
  const certFile = join(dir, `${name}.pem`)
  openssl(["req", "-newkey", "rsa:2048", "-nodes", "-subj", subject, "-keyout", keyFile, "-out", `${name}.csr`], dir)
  const ext = extensions === null ? [] : ["-extfile", `${name}.ext`]
  if (extensions !== null) writeFileSync(join(dir, `${name}.ext`), extensions)
  openssl(
    [
      "x509",
      "-req",
      "-in",
      `${name}.csr`,
      "-CA",
      ca.cert,
      "-CAkey",
      ca.key,
      "-CAcreateserial",
      "-days",
      "2",
      "-out",
      certFile,
      ...ext
    ],
    dir
  )
  const pemKeystore = join(dir, `${name}.keystore.pem`)
  writeFileSync(
    pemKeystore,
    readFileSync(keyFile, "utf8") + readFileSync(certFile, "utf8") + readFileSync(ca.cert, "utf8")
  )
  const pkcs12Keystore = join(dir, `${name}.p12`)
  openssl(
    [
      "pkcs12",
      "-export",
      "-in",
      certFile,
      "-inkey",
      keyFile,
      "-certfile",
      ca.cert,
      "-out",
      pkcs12Keystore,
      "-passout",
      `pass:${PASSWORD}`
    ],
    dir
  )
  return { subject, keyFile, certFile, pemKeystore, pkcs12Keystore, password: PASSWORD }
}

const makeCa = (dir: string, name: string): { readonly cert: string; readonly key: string } => {
  const cert = join(dir, `${name}.pem`)
  const key = join(dir, `${name}.key`)
  openssl(
    [
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-days",
      "2",
      "-subj",
      `/CN=${name}`,
      "-keyout",
      key,
      "-out",
      cert
    ],
    dir
  )
  return { cert, key }
}

/** Makes the CA, server and client material in `dir` (created). */
export const make = (dir: string): Certificates => {
  mkdirSync(dir, { recursive: true })
  const ca = makeCa(dir, "test-ca")
  const other = makeCa(dir, "other-ca")
  const pkcs12Truststore = join(dir, "truststore.p12")
  openssl(
    ["pkcs12", "-export", "-nokeys", "-in", ca.cert, "-out", pkcs12Truststore, "-passout", `pass:${PASSWORD}`],
    dir
  )
  return {
    dir,
    caFile: ca.cert,
    pkcs12Truststore,
    truststorePassword: PASSWORD,
    server: identity(dir, "server", "/CN=localhost", ca, "subjectAltName=IP:127.0.0.1,DNS:localhost\n"),
    client: identity(dir, "client", "/OU=test/CN=client", ca, null),
    untrustedClient: identity(dir, "untrusted", "/OU=test/CN=intruder", other, null)
  }
}
