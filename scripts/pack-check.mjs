// Run by scripts/pack-check.sh from the folder where the packed tarballs were installed with npm (so bare
// specifiers resolve to the installed packages, never to the workspace). Imports every published
// package and its public modules with plain Node, checks that internal modules are not exported,
// type-checks a consumer against the installed declarations, runs both bins, starts `clustermirror server --embedded 3` and asks it for ApiVersions and Metadata.
//   node pack-check.mjs REPO_ROOT PACKAGE_DIR...
import { spawn, spawnSync } from "node:child_process"
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { connect } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"

const [root, ...dirs] = process.argv.slice(2)
const here = process.cwd()
const failures = []
const fail = (what) => {
  failures.push(what)
  process.stderr.write(`FAIL ${what}\n`)
}

/** The runtime names a module's source exports (namespaces, re-exports, declarations; types skipped). */
const exportedNames = (file) => {
  const src = readFileSync(file, "utf8")
  const names = new Set()
  for (const m of src.matchAll(/^export \* as (\w+) from/gm)) names.add(m[1])
  for (const m of src.matchAll(/^export (?:async )?(?:const|let|function\*?|class) (\w+)/gm)) names.add(m[1])
  for (const m of src.matchAll(/^export \{([^}]*)\}/gm))
    for (const part of m[1].split(",")) {
      const name = part.trim()
      if (name === "" || name.startsWith("type ")) continue
      names.add(name.split(/\s+as\s+/).pop())
    }
  return [...names]
}

/** The source modules under src a `./*` export stands for, as paths relative to src (internal/ left out). */
const publicModules = (src, sub = "") =>
  readdirSync(join(src, sub), { withFileTypes: true }).flatMap((e) => {
    const rel = sub === "" ? e.name : `${sub}/${e.name}`
    if (e.isDirectory()) return rel === "internal" ? [] : publicModules(src, rel)
    return e.name.endsWith(".ts") && !e.name.endsWith(".d.ts") ? [rel] : []
  })

if (existsSync(join(here, "node_modules", "tsx"))) fail("tsx is installed with the published packages")

const bins = new Map()
/** What a TypeScript consumer imports: each package and each of its public modules. */
const typeSpecs = []
for (const dir of dirs) {
  const m = JSON.parse(readFileSync(join(root, dir, "package.json"), "utf8"))
  for (const name of Object.keys(m.bin ?? {})) bins.set(name, m.name)
  if (m.exports === undefined) continue
  let mod
  try {
    mod = await import(m.name)
  } catch (e) {
    fail(`import("${m.name}"): ${e instanceof Error ? e.message : String(e)}`)
    continue
  }
  const expected = exportedNames(join(root, dir, m.main))
  const missing = expected.filter((n) => !(n in mod))
  if (expected.length === 0) fail(`${m.name}: no runtime export found in ${m.main} to check`)
  if (missing.length > 0) fail(`import("${m.name}") lacks ${missing.join(", ")}`)
  typeSpecs.push(m.name)
  let modules = 0
  if (m.exports["./*"] !== undefined) {
    for (const f of publicModules(join(root, dir, "src"))) {
      if (f === "index.ts") continue
      const spec = `${m.name}/${f.slice(0, -3)}`
      try {
        await import(spec)
        typeSpecs.push(spec)
        modules++
      } catch (e) {
        fail(`import("${spec}"): ${e instanceof Error ? e.message : String(e)}`)
      }
    }
  }
  const internal = join(root, dir, "src", "internal")
  if (existsSync(internal)) {
    const f = readdirSync(internal).find((x) => x.endsWith(".ts"))
    if (f !== undefined) {
      const spec = `${m.name}/internal/${f.slice(0, -3)}`
      try {
        await import(spec)
        fail(`import("${spec}") succeeds: internal modules must not be exported`)
      } catch (e) {
        if (e?.code !== "ERR_PACKAGE_PATH_NOT_EXPORTED") fail(`import("${spec}"): ${String(e)}`)
      }
    }
  }
  const hidden = existsSync(internal) ? ", internal modules not exported" : ""
  console.log(`ok ${m.name}: ${expected.length} exports, ${modules} public modules${hidden}`)
}

// A consumer in TypeScript: every package and public module imported from the installed declarations,
// type-checked with the declarations themselves (skipLibCheck off), as a user's project would see them.
{
  const lines = []
  const used = []
  for (const [i, spec] of typeSpecs.entries()) {
    lines.push(`import * as M${i} from "${spec}"`)
    used.push(`M${i}`)
  }
  lines.push(`export const modules = [${used.join(", ")}] as const`)
  writeFileSync(join(here, "consumer.ts"), `${lines.join("\n")}\n`)
  const tsconfig = {
    compilerOptions: {
      target: "ES2022",
      module: "NodeNext",
      moduleResolution: "NodeNext",
      strict: true,
      noEmit: true,
      skipLibCheck: false,
      types: ["node"],
      typeRoots: [join(root, "node_modules", "@types")]
    },
    files: ["consumer.ts"]
  }
  writeFileSync(join(here, "tsconfig.json"), JSON.stringify(tsconfig, null, 2))
  const tsc = join(root, "node_modules", "typescript", "bin", "tsc")
  const r = spawnSync(process.execPath, [tsc, "-p", here], { encoding: "utf8", timeout: 300_000 })
  if (r.status !== 0) fail(`the installed declarations do not type-check:\n${r.stdout}${r.stderr}${r.error ?? ""}`)
  else console.log(`ok the installed declarations of ${typeSpecs.length} modules type-check (tsc, skipLibCheck off)`)
}

const bin = (name) => join(here, "node_modules", ".bin", name)
for (const [name, pkg] of bins) {
  if (!existsSync(bin(name))) {
    fail(`bin ${name} of ${pkg} is not installed in node_modules/.bin`)
    continue
  }
  // The bin is the compiled file itself: its shebang runs plain node.
  const r = spawnSync(bin(name), ["--help"], { encoding: "utf8", timeout: 60_000 })
  if (r.status !== 0 || !`${r.stdout}${r.stderr}`.includes(`usage: ${name}`))
    fail(`${name} --help exited ${r.status ?? r.signal}: ${r.stdout}${r.stderr}${r.error ?? ""}`)
  else console.log(`ok ${name} --help`)
}

/** Sends one request (v0/v1 non-flexible header) and reads the answer's body after its correlation id. */
const request = (port, apiKey, version, body) =>
  new Promise((resolve, reject) => {
    const clientId = Buffer.from("pack-check")
    const header = Buffer.alloc(10)
    header.writeInt16BE(apiKey, 0)
    header.writeInt16BE(version, 2)
    header.writeInt32BE(7, 4)
    header.writeInt16BE(clientId.length, 8)
    const payload = Buffer.concat([header, clientId, body])
    const size = Buffer.alloc(4)
    size.writeInt32BE(payload.length)
    const socket = connect({ host: "127.0.0.1", port })
    let got = Buffer.alloc(0)
    socket.setTimeout(10_000, () => socket.destroy(new Error(`no answer to api ${apiKey} in 10 s`)))
    socket.once("error", reject)
    socket.once("connect", () => socket.write(Buffer.concat([size, payload])))
    socket.on("data", (chunk) => {
      got = Buffer.concat([got, chunk])
      if (got.length >= 4 && got.length >= 4 + got.readInt32BE(0)) {
        socket.destroy()
        if (got.readInt32BE(4) !== 7) reject(new Error("wrong correlation id"))
        else resolve(got.subarray(8, 4 + got.readInt32BE(0)))
      }
    })
  })

/** ApiVersions v0: the error code and Metadata's version range. */
const apiVersions = async (port) => {
  const r = await request(port, 18, 0, Buffer.alloc(0))
  const error = r.readInt16BE(0)
  const n = r.readInt32BE(2)
  for (let i = 0; i < n; i++) {
    const at = 6 + i * 6
    if (r.readInt16BE(at) === 3) return { error, metadata: [r.readInt16BE(at + 2), r.readInt16BE(at + 4)] }
  }
  return { error, metadata: null }
}

/** Metadata v1 for all topics: the brokers' node ids. */
const metadataBrokers = async (port) => {
  const all = Buffer.alloc(4)
  all.writeInt32BE(-1)
  const r = await request(port, 3, 1, all)
  const brokers = []
  let at = 4
  for (let i = r.readInt32BE(0); i > 0; i--) {
    brokers.push(r.readInt32BE(at))
    at += 4
    at += 2 + r.readInt16BE(at) // host
    at += 4 // port
    const rack = r.readInt16BE(at)
    at += 2 + Math.max(rack, 0)
  }
  return brokers.sort((a, b) => a - b)
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

const startServer = async () => {
  const data = mkdtempSync(join(tmpdir(), "clustermirror-pack-check-"))
  const child = spawn(bin("clustermirror"), ["server", "--embedded", "3", "--port", "0", "--data-dir", data], {
    stdio: ["ignore", "pipe", "pipe"]
  })
  let out = ""
  child.stdout.on("data", (c) => (out += c))
  child.stderr.on("data", (c) => (out += c))
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })))
  let status = "running"
  void exited.then(() => (status = "exited"))
  const cleanup = () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
    rmSync(data, { recursive: true, force: true })
  }
  try {
    let bootstrap
    for (let waited = 0; bootstrap === undefined; waited += 200) {
      if (status === "exited") throw new Error(`clustermirror server --embedded 3 exited early:\n${out}`)
      if (waited > 120_000) throw new Error(`clustermirror server --embedded 3 did not start in 120 s:\n${out}`)
      bootstrap = /embedded cluster \S+: controller on \S+, brokers (\S+)/.exec(out)?.[1]
      await sleep(200)
    }
    const port = Number(bootstrap.split(",")[0].split(":").pop())
    const versions = await apiVersions(port)
    if (versions.error !== 0) throw new Error(`ApiVersions answered error ${versions.error}`)
    if (versions.metadata === null || versions.metadata[0] > 1 || versions.metadata[1] < 1)
      throw new Error(`ApiVersions: Metadata v1 not served (${versions.metadata})`)
    let brokers = []
    for (let waited = 0; brokers.length < 3; waited += 500) {
      if (waited > 60_000) throw new Error(`Metadata lists brokers [${brokers}] after 60 s, not 3:\n${out}`)
      brokers = await metadataBrokers(port)
      if (brokers.length < 3) await sleep(500)
    }
    console.log(
      `ok clustermirror server --embedded 3: brokers ${bootstrap} answer ApiVersions and Metadata [${brokers}]`
    )
    child.kill("SIGTERM")
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000)
    const end = await exited
    clearTimeout(timer)
    if (end.code !== 0 || !out.includes("stopped"))
      throw new Error(`after SIGTERM the server exited with ${end.code ?? end.signal}:\n${out}`)
    console.log("ok clustermirror server stopped cleanly on SIGTERM (exit code 0)")
  } finally {
    cleanup()
  }
}

if (bins.has("clustermirror")) {
  try {
    await startServer()
  } catch (e) {
    fail(e instanceof Error ? e.message : String(e))
  }
} else fail("no package publishes the clustermirror bin")

if (failures.length > 0) {
  process.stderr.write(`pack check: ${failures.length} failure(s)\n`)
  process.exit(1)
}
