/**
 * The certificates of a PKCS12 truststore (RFC 7292), which Node's TLS cannot read itself (its `pfx` needs a
 * private key). Reads DER, checks the integrity MAC with the password (HMAC over the PKCS12 key
 * derivation), and decrypts the certificate bags: PBES2 (PBKDF2 with AES-CBC, what OpenSSL 3 and Java
 * 12+ write) and PKCS12's 3DES; RC2 (older tools' default) is refused with a hint. Errors never hold the
 * password.
 */
import * as crypto from "node:crypto"

interface Der {
  readonly tag: number
  readonly value: Buffer
}

const read = (b: Buffer, offset: number): { readonly node: Der; readonly next: number } => {
  if (offset + 2 > b.length) throw new Error("truncated DER")
  const tag = b[offset]!
  let len = b[offset + 1]!
  let p = offset + 2
  if (len & 0x80) {
    const n = len & 0x7f
    if (n === 0 || n > 4) throw new Error("unsupported DER length")
    len = 0
    for (let i = 0; i < n; i++) len = len * 256 + b[p++]!
  }
  if (p + len > b.length) throw new Error("truncated DER")
  return { node: { tag, value: b.subarray(p, p + len) }, next: p + len }
}

const one = (b: Buffer): Der => read(b, 0).node

const children = (d: Der): Der[] => {
  const out: Der[] = []
  for (let p = 0; p < d.value.length; ) {
    const r = read(d.value, p)
    out.push(r.node)
    p = r.next
  }
  return out
}

const at = (nodes: ReadonlyArray<Der>, i: number, tag?: number): Der => {
  const n = nodes[i]
  if (n === undefined || (tag !== undefined && n.tag !== tag)) throw new Error("unexpected PKCS12 structure")
  return n
}

const SEQUENCE = 0x30
const OCTET_STRING = 0x04
const INTEGER = 0x02
const OID = 0x06
const CONTEXT_0 = 0xa0
const CONTEXT_0_PRIMITIVE = 0x80

const OIDS = {
  data: "2a864886f70d010701",
  encryptedData: "2a864886f70d010706",
  certBag: "2a864886f70d010c0a0103",
  x509Certificate: "2a864886f70d01091601",
  pbes2: "2a864886f70d01050d",
  pbkdf2: "2a864886f70d01050c",
  pbeSha1TripleDes: "2a864886f70d010c0103",
  pbeSha1Rc2_40: "2a864886f70d010c0106",
  pbeSha1Rc2_128: "2a864886f70d010c0105"
} as const

const HMACS: Readonly<Record<string, string>> = {
  "2a864886f70d0207": "sha1",
  "2a864886f70d0208": "sha224",
  "2a864886f70d0209": "sha256",
  "2a864886f70d020a": "sha384",
  "2a864886f70d020b": "sha512"
}
const DIGESTS: Readonly<Record<string, string>> = {
  "2b0e03021a": "sha1",
  "608648016503040204": "sha224",
  "608648016503040201": "sha256",
  "608648016503040202": "sha384",
  "608648016503040203": "sha512"
}
const AES: Readonly<Record<string, string>> = {
  "608648016503040102": "aes-128-cbc",
  "608648016503040116": "aes-192-cbc",
  "60864801650304012a": "aes-256-cbc"
}

const int = (d: Der): number => {
  let n = 0
  for (const byte of d.value) n = n * 256 + byte
  return n
}

/** The password as PKCS12's key derivation takes it: a BMPString (UTF-16BE) with a terminating zero. */
const bmp = (password: string): Buffer => {
  const out = Buffer.alloc((password.length + 1) * 2)
  for (let i = 0; i < password.length; i++) out.writeUInt16BE(password.charCodeAt(i), i * 2)
  return out
}

/** RFC 7292 Appendix B.2: PKCS12's key derivation (id 1: key, 2: IV, 3: MAC key). */
const pkcs12Kdf = (
  hash: string,
  password: Buffer,
  salt: Buffer,
  iterations: number,
  id: number,
  size: number
): Buffer => {
  const u = crypto.createHash(hash).digest().length
  const v = hash === "sha384" || hash === "sha512" ? 128 : 64
  const fill = (src: Buffer): Buffer => {
    if (src.length === 0) return Buffer.alloc(0)
    const out = Buffer.alloc(v * Math.ceil(src.length / v))
    for (let i = 0; i < out.length; i++) out[i] = src[i % src.length]!
    return out
  }
  const D = Buffer.alloc(v, id)
  const I = Buffer.concat([fill(salt), fill(password)])
  const blocks: Buffer[] = []
  for (let done = 0; done < size; done += u) {
    let A = crypto.createHash(hash).update(D).update(I).digest()
    for (let r = 1; r < iterations; r++) A = crypto.createHash(hash).update(A).digest()
    blocks.push(A)
    const B = fill(A)
    for (let j = 0; j < I.length; j += v) {
      let carry = 1
      for (let k = v - 1; k >= 0; k--) {
        const sum = I[j + k]! + B[k]! + carry
        I[j + k] = sum & 0xff
        carry = sum >> 8
      }
    }
  }
  return Buffer.concat(blocks).subarray(0, size)
}

const decrypt = (algorithm: Der, encrypted: Buffer, password: string): Buffer => {
  const [oid, params] = children(algorithm)
  const id = at([oid!], 0, OID).value.toString("hex")
  if (id === OIDS.pbeSha1Rc2_40 || id === OIDS.pbeSha1Rc2_128)
    throw new Error("its certificates are RC2-encrypted, which Node cannot decrypt: re-export it with AES (PBES2)")
  if (id === OIDS.pbeSha1TripleDes) {
    const [salt, iterations] = children(params!)
    const key = pkcs12Kdf("sha1", bmp(password), at([salt!], 0, OCTET_STRING).value, int(iterations!), 1, 24)
    const iv = pkcs12Kdf("sha1", bmp(password), salt!.value, int(iterations!), 2, 8)
    const d = crypto.createDecipheriv("des-ede3-cbc", key, iv)
    return Buffer.concat([d.update(encrypted), d.final()])
  }
  if (id !== OIDS.pbes2) throw new Error("its certificates use an encryption this reader does not know")
  const [kdf, scheme] = children(params!)
  const [kdfOid, kdfParams] = children(kdf!)
  if (kdfOid!.value.toString("hex") !== OIDS.pbkdf2) throw new Error("PBES2 without PBKDF2 is not supported")
  const kp = children(kdfParams!)
  const salt = at(kp, 0, OCTET_STRING).value
  const iterations = int(at(kp, 1, INTEGER))
  const prfNode = kp.find((n) => n.tag === SEQUENCE)
  const prf = prfNode === undefined ? "sha1" : HMACS[children(prfNode)[0]!.value.toString("hex")]
  const [schemeOid, ivNode] = children(scheme!)
  const cipher = AES[schemeOid!.value.toString("hex")]
  if (prf === undefined || cipher === undefined) throw new Error("its PBES2 parameters are not supported")
  const keyLength = Number(cipher.slice(4, 7)) / 8
  const key = crypto.pbkdf2Sync(Buffer.from(password, "utf8"), salt, iterations, keyLength, prf)
  const d = crypto.createDecipheriv(cipher, key, at([ivNode!], 0, OCTET_STRING).value)
  return Buffer.concat([d.update(encrypted), d.final()])
}

const verifyMac = (macData: Der, content: Buffer, password: string): void => {
  const [mac, macSalt, iterations] = children(macData)
  const [digestAlgorithm, digest] = children(mac!)
  const hash = DIGESTS[children(digestAlgorithm!)[0]!.value.toString("hex")]
  if (hash === undefined) throw new Error("its MAC algorithm is not supported")
  const size = crypto.createHash(hash).digest().length
  const key = pkcs12Kdf(hash, bmp(password), macSalt!.value, iterations === undefined ? 1 : int(iterations), 3, size)
  const expected = crypto.createHmac(hash, key).update(content).digest()
  if (expected.length !== digest!.value.length || !crypto.timingSafeEqual(expected, Buffer.from(digest!.value)))
    throw new Error("wrong password or corrupt file (MAC check failed)")
}

const certsOf = (safeContents: Buffer): Buffer[] => {
  const out: Buffer[] = []
  for (const bag of children(one(safeContents))) {
    const [bagId, bagValue] = children(bag)
    if (bagId!.value.toString("hex") !== OIDS.certBag) continue
    const [certId, certValue] = children(children(at([bagValue!], 0, CONTEXT_0))[0]!)
    if (certId!.value.toString("hex") !== OIDS.x509Certificate) continue
    out.push(at(children(at([certValue!], 0, CONTEXT_0)), 0, OCTET_STRING).value)
  }
  return out
}

/** The X.509 certificates (PEM) of a PKCS12 file; throws (without the password) when it cannot read them. */
export const certificates = (file: Buffer, password: string | null): ReadonlyArray<string> => {
  const pass = password ?? ""
  const pfx = children(one(file))
  const authSafe = children(at(pfx, 1, SEQUENCE))
  if (at(authSafe, 0, OID).value.toString("hex") !== OIDS.data) throw new Error("not a password-integrity PKCS12 file")
  const content = at(children(at(authSafe, 1, CONTEXT_0)), 0, OCTET_STRING).value
  const macData = pfx[2]
  if (macData !== undefined) verifyMac(macData, content, pass)
  const ders: Buffer[] = []
  for (const info of children(one(content))) {
    const [type, explicit] = children(info)
    const kind = type!.value.toString("hex")
    const inner = children(at([explicit!], 0, CONTEXT_0))[0]!
    if (kind === OIDS.data) ders.push(...certsOf(inner.value))
    else if (kind === OIDS.encryptedData) {
      const eci = children(at(children(inner), 1, SEQUENCE))
      const encrypted = eci[2]
      if (encrypted === undefined || (encrypted.tag !== CONTEXT_0_PRIMITIVE && encrypted.tag !== CONTEXT_0))
        throw new Error("unexpected PKCS12 structure")
      const bytes =
        encrypted.tag === CONTEXT_0
          ? Buffer.concat(children(encrypted).map((c) => c.value))
          : Buffer.from(encrypted.value)
      let plain: Buffer
      try {
        plain = decrypt(at(eci, 1, SEQUENCE), bytes, pass)
      } catch (e) {
        const m = e instanceof Error ? e.message : String(e)
        throw new Error(/bad decrypt/i.test(m) ? "wrong password or corrupt file" : m)
      }
      ders.push(...certsOf(plain))
    }
  }
  return ders.map((der) => new crypto.X509Certificate(der).toString())
}
