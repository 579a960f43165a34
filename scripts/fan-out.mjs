#!/usr/bin/env node
// Fails when `Promise.all(` or `Promise.allSettled(` appears in the src of the control-plane packages
// (client, coordinator, coordinator-runtime, group-coordinator, mirror, controller): a fan-out over
// brokers or nodes goes through `FanOut.forEachBroker` of @clustermirror/client (bounded concurrency,
// per-broker timeout, one merge). Comments are ignored. A line right below a comment starting
// `not a fan-out:` (with the reason: e.g. closing local shards) is allowed. Prints every offending line.
// `--warn`: print them but exit 0 (how `pnpm lint` runs it until every package is clean).
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"

const root = resolve(dirname(new URL(import.meta.url).pathname), "..")
const warn = process.argv.includes("--warn")
const PACKAGES = ["client", "coordinator", "coordinator-runtime", "group-coordinator", "mirror", "controller"]
const FORBIDDEN = /\bPromise\.(all|allSettled)\s*\(/

const walk = (dir) =>
  readdirSync(dir).flatMap((f) => {
    const p = join(dir, f)
    return statSync(p).isDirectory() ? walk(p) : p.endsWith(".ts") ? [p] : []
  })

/** The code of a line without its comment (a line inside a block comment is all comment). */
const code = (line) => {
  const t = line.trimStart()
  if (t.startsWith("//") || t.startsWith("*") || t.startsWith("/*")) return ""
  return line.replace(/\/\/.*$/, "")
}

const found = []
for (const name of PACKAGES) {
  const src = join(root, "packages", name, "src")
  if (!existsSync(src)) continue
  for (const file of walk(src)) {
    const lines = readFileSync(file, "utf8").split("\n")
    lines.forEach((line, i) => {
      const exempt = i > 0 && /^\s*\/\/ not a fan-out: \S/.test(lines[i - 1] ?? "")
      if (!exempt && FORBIDDEN.test(code(line))) found.push(`${relative(root, file)}:${i + 1}: ${line.trim()}`)
    })
  }
}

if (found.length === 0) {
  console.log("fan-out: no Promise.all/allSettled in control-plane src")
} else {
  console.error(`fan-out: ${found.length} Promise.all/allSettled in control-plane src (use FanOut.forEachBroker):`)
  for (const f of found) console.error(`  ${f}`)
  if (!warn) process.exit(1)
}
