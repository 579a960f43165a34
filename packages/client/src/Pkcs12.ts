/**
 * The certificates of a PKCS#12 trust store (RFC 7292), which Node's TLS cannot take as a trust store:
 * it opens PKCS#12 only as a key store with a private key. Reads DER, checks the integrity MAC when a
 * password is given, decrypts PBES2 (PBKDF2 with AES or 3DES, what OpenSSL 3 and Java 17 write) and
 * the PKCS#12 3DES scheme, and collects the X.509 certificate bags. Messages never hold the password.
 */
import { Either } from "effect"
import { Buffer } from "node:buffer"
import * as crypto from "node:crypto"

interface Tlv {
  readonly tag: number
  readonly start: number
  readonly end: number
  readonly next: number
}

class DerError extends Error {}

const fail = (message: string): never => {
  throw new DerError(message)
}

const readTlv = (buf: Buffer, at: number, limit: number): Tlv => {
  if (at + 2 > limit) return fail("truncated DER")
  const tag = buf[at]!
  let len = buf[at + 1]!
  let start = at + 2
  if (len === 0x80) return fail("indefinite-length encoding is not supported")
  if (len > 0x80) {
    const n = len & 0x7f
    if (n > 4 || start + n > limit) return fail("bad DER length")
    len = 0
    for (let i = 0; i < n; i++) len = len * 256 + buf[start + i]!
    start += n
  }
  const end = start + len
  if (end > limit) return fail("truncated DER")
  return { tag, start, end, next: end }
}

const children = (buf: Buffer, tlv: Tlv): ReadonlyArray<Tlv> => {
  const out: Array<Tlv> = []
  let at = tlv.start
  while (at < tlv.end) {
    const c = readTlv(buf, at, tlv.end)
    out.push(c)
    at = c.next
  }
  return out
}

const expect = (tlv: Tlv | undefined, tag: number, what: string): Tlv =>
  tlv !== undefined && tlv.tag === tag ? tlv : fail(`malformed ${what}`)

const SEQUENCE = 0x30
const OCTET_STRING = 0x04
const OID = 0x06
const INTEGER = 0x02
const CONTEXT_0 = 0xa0

const oid = (buf: Buffer, tlv: Tlv): string => {
  const bytes = buf.subarray(tlv.start, tlv.end)
  const parts: Array<number> = []
  let value = 0
  for (const b of bytes) {
    value = value * 128 + (b & 0x7f)
    if ((b & 0x80) === 0) {
      if (parts.length === 0) parts.push(value < 80 ? Math.floor(value / 40) : 2, value < 80 ? value % 40 : value - 80)
      else parts.push(value)
      value = 0
    }
  }
  return parts.join(".")
}

const integer = (buf: Buffer, tlv: Tlv): number => {
  let n = 0
  for (let i = tlv.start; i < tlv.end; i++) n = n * 256 + buf[i]!
  return n
}

const bytes = (buf: Buffer, tlv: Tlv): Buffer => buf.subarray(tlv.start, tlv.end)

/** The content of `[0] EXPLICIT OCTET STRING` (or the OCTET STRING pieces of a constructed one). */
const octets = (buf: Buffer, tlv: Tlv, what: string): Buffer => {
  if (tlv.tag === OCTET_STRING) return bytes(buf, tlv)
  if (tlv.tag === 0x24) return Buffer.concat(children(buf, tlv).map((c) => octets(buf, c, what)))
  return fail(`malformed ${what}`)
}

const OIDS = {
  data: "1.2.840.113549.1.7.1",
  encryptedData: "1.2.840.113549.1.7.6",
  certBag: "1.2.840.113549.1.12.10.1.3",
  safeContentsBag: "1.2.840.113549.1.12.10.1.6",
  x509Certificate: "1.2.840.113549.1.9.22.1",
  pbes2: "1.2.840.113549.1.5.13",
  pbkdf2: "1.2.840.113549.1.5.12",
  pbmac1: "1.2.840.113549.1.5.14",
  pbeSha3Des: "1.2.840.113549.1.12.1.3",
  pbeSha2Des: "1.2.840.113549.1.12.1.4",
  pbeShaRc2_128: "1.2.840.113549.1.12.1.5",
  pbeShaRc2_40: "1.2.840.113549.1.12.1.6"
} as const

const HASHES: ReadonlyMap<string, { readonly name: string; readonly block: number }> = new Map([
  ["1.3.14.3.2.26", { name: "sha1", block: 64 }],
  ["2.16.840.1.101.3.4.2.1", { name: "sha256", block: 64 }],
  ["2.16.840.1.101.3.4.2.2", { name: "sha384", block: 128 }],
  ["2.16.840.1.101.3.4.2.3", { name: "sha512", block: 128 }],
  ["2.16.840.1.101.3.4.2.4", { name: "sha224", block: 64 }]
])

const PRFS: ReadonlyMap<string, string> = new Map([
  ["1.2.840.113549.2.7", "sha1"],
  ["1.2.840.113549.2.8", "sha224"],
  ["1.2.840.113549.2.9", "sha256"],
  ["1.2.840.113549.2.10", "sha384"],
  ["1.2.840.113549.2.11", "sha512"]
])

const CIPHERS: ReadonlyMap<string, { readonly name: string; readonly keyLength: number }> = new Map([
  ["2.16.840.1.101.3.4.1.2", { name: "aes-128-cbc", keyLength: 16 }],
  ["2.16.840.1.101.3.4.1.22", { name: "aes-192-cbc", keyLength: 24 }],
  ["2.16.840.1.101.3.4.1.42", { name: "aes-256-cbc", keyLength: 32 }],
  ["1.2.840.113549.3.7", { name: "des-ede3-cbc", keyLength: 24 }]
])

/** The password as PKCS#12's key derivation takes it: BMPString, with a terminating NUL. */
const bmpPassword = (password: string): Buffer => {
  const out = Buffer.alloc((password.length + 1) * 2)
  for (let i = 0; i < password.length; i++) out.writeUInt16BE(password.charCodeAt(i), i * 2)
  return out
}

/** RFC 7292 Appendix B.2: `n` bytes of key material of purpose `id` (1 key, 2 IV, 3 MAC key). */
export const pkcs12Kdf = (
  hash: { readonly name: string; readonly block: number },
  password: string,
  salt: Buffer,
  iterations: number,
  id: number,
  n: number
): Buffer => {
  const v = hash.block
  const fill = (src: Buffer): Buffer => {
    if (src.length === 0) return Buffer.alloc(0)
    const out = Buffer.alloc(v * Math.ceil(src.length / v))
    for (let i = 0; i < out.length; i++) out[i] = src[i % src.length]!
    return out
  }
  const d = Buffer.alloc(v, id)
  const i = Buffer.concat([fill(salt), fill(bmpPassword(password))])
  const out: Array<Buffer> = []
  let produced = 0
  while (produced < n) {
    let a = crypto.createHash(hash.name).update(d).update(i).digest()
    for (let r = 1; r < iterations; r++) a = crypto.createHash(hash.name).update(a).digest()
    out.push(a)
    produced += a.length
    if (produced >= n) break
    const b = Buffer.alloc(v)
    for (let k = 0; k < v; k++) b[k] = a[k % a.length]!
    for (let j = 0; j < i.length; j += v) {
      let carry = 1
      for (let k = v - 1; k >= 0; k--) {
        const sum = i[j + k]! + b[k]! + carry
        i[j + k] = sum & 0xff
        carry = sum >> 8
      }
    }
  }
  return Buffer.concat(out).subarray(0, n)
}

const verifyMac = (buf: Buffer, macData: Tlv, content: Buffer, password: string): void => {
  const [digestInfo, macSalt, iterations] = children(buf, macData)
  const [algorithm, digest] = children(buf, expect(digestInfo, SEQUENCE, "MAC"))
  const algOid = oid(buf, expect(children(buf, expect(algorithm, SEQUENCE, "MAC algorithm"))[0], OID, "MAC algorithm"))
  if (algOid === OIDS.pbmac1) fail("PBMAC1 integrity is not supported")
  const hash = HASHES.get(algOid) ?? fail(`the MAC digest ${algOid} is not supported`)
  const salt = bytes(buf, expect(macSalt, OCTET_STRING, "MAC salt"))
  const iter = iterations === undefined ? 1 : integer(buf, expect(iterations, INTEGER, "MAC iterations"))
  const expected = bytes(buf, expect(digest, OCTET_STRING, "MAC digest"))
  const key = pkcs12Kdf(hash, password, salt, iter, 3, expected.length)
  const actual = crypto.createHmac(hash.name, key).update(content).digest()
  if (actual.length !== expected.length || !crypto.timingSafeEqual(actual, expected))
    fail("the integrity check failed (wrong password?)")
}

const decrypt = (buf: Buffer, algorithm: Tlv, data: Buffer, password: string | null): Buffer => {
  const [algOidTlv, params] = children(buf, algorithm)
  const alg = oid(buf, expect(algOidTlv, OID, "encryption algorithm"))
  if (password === null) return fail("its certificates are encrypted: set ssl.truststore.password")
  const run = (cipher: string, key: Buffer, iv: Buffer): Buffer => {
    try {
      const d = crypto.createDecipheriv(cipher, key, iv)
      return Buffer.concat([d.update(data), d.final()])
    } catch {
      return fail("its certificates cannot be decrypted (wrong password?)")
    }
  }
  if (alg === OIDS.pbes2) {
    const [kdf, scheme] = children(buf, expect(params, SEQUENCE, "PBES2 parameters"))
    const [kdfOid, kdfParams] = children(buf, expect(kdf, SEQUENCE, "PBES2 key derivation"))
    if (oid(buf, expect(kdfOid, OID, "PBES2 key derivation")) !== OIDS.pbkdf2)
      fail("the PBES2 key derivation is not PBKDF2")
    const fields = children(buf, expect(kdfParams, SEQUENCE, "PBKDF2 parameters"))
    const salt = bytes(buf, expect(fields[0], OCTET_STRING, "PBKDF2 salt"))
    const iterations = integer(buf, expect(fields[1], INTEGER, "PBKDF2 iterations"))
    let prf = "sha1"
    for (const f of fields.slice(2))
      if (f.tag === SEQUENCE) {
        const prfOid = oid(buf, expect(children(buf, f)[0], OID, "PBKDF2 PRF"))
        prf = PRFS.get(prfOid) ?? fail(`the PBKDF2 PRF ${prfOid} is not supported`)
      }
    const [cipherOid, ivTlv] = children(buf, expect(scheme, SEQUENCE, "PBES2 encryption scheme"))
    const cOid = oid(buf, expect(cipherOid, OID, "PBES2 cipher"))
    const cipher = CIPHERS.get(cOid) ?? fail(`the cipher ${cOid} is not supported`)
    const iv = bytes(buf, expect(ivTlv, OCTET_STRING, "PBES2 IV"))
    const key = crypto.pbkdf2Sync(Buffer.from(password, "utf8"), salt, iterations, cipher.keyLength, prf)
    return run(cipher.name, key, iv)
  }
  if (alg === OIDS.pbeSha3Des) {
    const [saltTlv, iterTlv] = children(buf, expect(params, SEQUENCE, "PBE parameters"))
    const salt = bytes(buf, expect(saltTlv, OCTET_STRING, "PBE salt"))
    const iterations = integer(buf, expect(iterTlv, INTEGER, "PBE iterations"))
    const sha1 = HASHES.get("1.3.14.3.2.26")!
    return run(
      "des-ede3-cbc",
      pkcs12Kdf(sha1, password, salt, iterations, 1, 24),
      pkcs12Kdf(sha1, password, salt, iterations, 2, 8)
    )
  }
  if (alg === OIDS.pbeShaRc2_40 || alg === OIDS.pbeShaRc2_128 || alg === OIDS.pbeSha2Des)
    return fail("its certificates use legacy RC2/2-key 3DES encryption: export it again with AES (OpenSSL 3's default)")
  return fail(`the encryption ${alg} is not supported`)
}

const safeContents = (buf: Buffer, out: Array<Buffer>): void => safeBags(buf, readTlv(buf, 0, buf.length), out)

const safeBags = (buf: Buffer, tlv: Tlv, out: Array<Buffer>): void => {
  const root = expect(tlv, SEQUENCE, "SafeContents")
  for (const bag of children(buf, root)) {
    const [bagIdTlv, valueTlv] = children(buf, expect(bag, SEQUENCE, "SafeBag"))
    const bagId = oid(buf, expect(bagIdTlv, OID, "SafeBag id"))
    const value = expect(valueTlv, CONTEXT_0, "SafeBag value")
    if (bagId === OIDS.certBag) {
      const [certIdTlv, certValue] = children(buf, expect(children(buf, value)[0], SEQUENCE, "CertBag"))
      if (oid(buf, expect(certIdTlv, OID, "CertBag id")) !== OIDS.x509Certificate) continue
      const inner = children(buf, expect(certValue, CONTEXT_0, "CertBag value"))[0]
      out.push(Buffer.from(octets(buf, expect(inner, OCTET_STRING, "certificate"), "certificate")))
    } else if (bagId === OIDS.safeContentsBag) {
      const inner = children(buf, value)[0]
      if (inner !== undefined) safeBags(buf, inner, out)
    }
  }
}

/** The X.509 certificates (DER) a PKCS#12 file holds, or why they cannot be read. */
export const certificates = (der: Buffer, password: string | null): Either.Either<ReadonlyArray<Buffer>, string> => {
  try {
    const pfx = expect(readTlv(der, 0, der.length), SEQUENCE, "PKCS12 file")
    const [version, authSafe, macData] = children(der, pfx)
    if (integer(der, expect(version, INTEGER, "PKCS12 version")) !== 3) fail("not a PKCS12 version 3 file")
    const [ctype, content] = children(der, expect(authSafe, SEQUENCE, "PKCS12 content"))
    if (oid(der, expect(ctype, OID, "PKCS12 content type")) !== OIDS.data)
      fail("public-key integrity mode is not supported")
    const inner = children(der, expect(content, CONTEXT_0, "PKCS12 content"))[0]
    const authSafeBytes = octets(
      der,
      expect(inner, inner?.tag === 0x24 ? 0x24 : OCTET_STRING, "PKCS12 content"),
      "PKCS12 content"
    )
    if (macData !== undefined && password !== null)
      verifyMac(der, expect(macData, SEQUENCE, "MAC"), authSafeBytes, password)
    const out: Array<Buffer> = []
    const safes = expect(readTlv(authSafeBytes, 0, authSafeBytes.length), SEQUENCE, "AuthenticatedSafe")
    for (const info of children(authSafeBytes, safes)) {
      const [typeTlv, valueTlv] = children(authSafeBytes, expect(info, SEQUENCE, "ContentInfo"))
      const type = oid(authSafeBytes, expect(typeTlv, OID, "ContentInfo type"))
      const value = expect(valueTlv, CONTEXT_0, "ContentInfo value")
      if (type === OIDS.data) {
        const o = children(authSafeBytes, value)[0]
        safeContents(
          Buffer.from(octets(authSafeBytes, expect(o, o?.tag === 0x24 ? 0x24 : OCTET_STRING, "data"), "data")),
          out
        )
      } else if (type === OIDS.encryptedData) {
        const [, eci] = children(authSafeBytes, expect(children(authSafeBytes, value)[0], SEQUENCE, "EncryptedData"))
        const [, algorithm, encrypted] = children(authSafeBytes, expect(eci, SEQUENCE, "EncryptedContentInfo"))
        if (encrypted === undefined) continue
        const data =
          encrypted.tag === 0x80
            ? bytes(authSafeBytes, encrypted)
            : encrypted.tag === 0xa0
              ? Buffer.concat(
                  children(authSafeBytes, encrypted).map((c) => octets(authSafeBytes, c, "encrypted content"))
                )
              : fail("malformed encrypted content")
        safeContents(decrypt(authSafeBytes, expect(algorithm, SEQUENCE, "encryption algorithm"), data, password), out)
      }
    }
    return Either.right(out)
  } catch (e) {
    if (e instanceof DerError) return Either.left(e.message)
    throw e
  }
}

/** A DER certificate as PEM. */
export const toPem = (der: Buffer): string => {
  const b64 = der.toString("base64")
  const lines: Array<string> = []
  for (let i = 0; i < b64.length; i += 64) lines.push(b64.slice(i, i + 64))
  return `-----BEGIN CERTIFICATE-----\n${lines.join("\n")}\n-----END CERTIFICATE-----\n`
}
