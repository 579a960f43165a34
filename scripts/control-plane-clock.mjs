#!/usr/bin/env node
// Fails when `setTimeout`, `setInterval` or `Date.now` appears in the src of the control-plane packages
// (coordinator, coordinator-runtime, group-coordinator, mirror, controller): their time comes from
// Effect's `Clock` (`Clock.currentTimeMillis`, `Effect.sleep`, `Schedule`), so their tests run on
// `TestClock`. The one allowed place is a package's bridge for non-Effect callers, `src/internal/Clock.ts`.
// Comments are ignored. Prints every offending line.
// `--warn`: print them but exit 0 (how `pnpm lint` runs it until every package is clean).
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { dirname, join, relative, resolve, sep } from "node:path"

const root = resolve(dirname(new URL(import.meta.url).pathname), "..")
const warn = process.argv.includes("--warn")
const PACKAGES = ["coordinator", "coordinator-runtime", "group-coordinator", "mirror", "controller"]
const FORBIDDEN = /\b(setTimeout|setInterval)\s*\(|\bDate\.now\b/
const ALLOWED = `${sep}internal${sep}Clock.ts`

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
    if (file.endsWith(ALLOWED)) continue
    const lines = readFileSync(file, "utf8").split("\n")
    lines.forEach((line, i) => {
      if (FORBIDDEN.test(code(line))) found.push(`${relative(root, file)}:${i + 1}: ${line.trim()}`)
    })
  }
}

if (found.length === 0) {
  console.log("control-plane-clock: no setTimeout/setInterval/Date.now in control-plane src")
} else {
  console.error(
    `control-plane-clock: ${found.length} setTimeout/setInterval/Date.now in control-plane src (use Effect's Clock, or src/internal/Clock.ts):`
  )
  for (const f of found) console.error(`  ${f}`)
  if (!warn) process.exit(1)
}
