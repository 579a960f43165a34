#!/usr/bin/env node
// Checks that every publishable package (packages/* and apps/* without `"private": true`) has the
// published shape: a build (tsconfig.build.json emitting dist), `files` with dist, `types`, a
// `publishConfig` that points `main`/`types`/`exports`/`bin` at dist (the workspace keeps exports to
// src), `effect` as a peer dependency, and no run-time dependency on tsx or on a private package.
//   node scripts/package-shape.mjs           the manifests
//   node scripts/package-shape.mjs --built   also that dist holds every published file (after a build)
//   node scripts/package-shape.mjs --list    prints the publishable package dirs, one a line
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"

const root = resolve(dirname(new URL(import.meta.url).pathname), "..")
const mode = process.argv[2] ?? "--check"

const all = []
for (const group of ["packages", "apps"]) {
  const dir = join(root, group)
  if (!existsSync(dir)) continue
  for (const name of readdirSync(dir).sort()) {
    const file = join(dir, name, "package.json")
    if (existsSync(file)) all.push({ dir: join(dir, name), manifest: JSON.parse(readFileSync(file, "utf8")) })
  }
}
const byName = new Map(all.map((p) => [p.manifest.name, p]))
const publishable = all.filter((p) => p.manifest.private !== true)

if (mode === "--list") {
  for (const p of publishable) process.stdout.write(`${relative(root, p.dir)}\n`)
  process.exit(0)
}

/** Every target of an `exports` value (strings, possibly nested in conditions). */
const targets = (value) =>
  value === null ? [] : typeof value === "string" ? [value] : Object.values(value).flatMap((v) => targets(v))

const problems = []
for (const { dir, manifest: m } of publishable) {
  const where = relative(root, dir)
  const fail = (what) => problems.push(`${where} (${m.name}): ${what}`)
  const pub = m.publishConfig
  if (!m.scripts?.build) fail('no "build" script')
  if (!existsSync(join(dir, "tsconfig.build.json"))) fail("no tsconfig.build.json (the build emitting dist)")
  if (!Array.isArray(m.files) || !m.files.includes("dist")) fail('"files" does not list "dist"')
  if (m.exports === undefined && m.bin === undefined) fail('neither "exports" nor "bin": nothing to publish')
  const hasPub = typeof pub === "object" && pub !== null
  if (!hasPub) fail('no "publishConfig" (it points exports, main, types and bin at dist in the published form)')
  else if (pub.access !== "public") fail('publishConfig.access is not "public"')
  if (m.exports !== undefined && typeof m.types !== "string") fail('no "types"')
  if (hasPub && m.exports !== undefined) {
    if (typeof pub.types !== "string" || !/^\.\/dist\/.*\.d\.ts$/.test(pub.types))
      fail("publishConfig.types is not a ./dist/*.d.ts file")
    if (typeof pub.main !== "string" || !/^\.\/dist\/.*\.js$/.test(pub.main))
      fail("publishConfig.main is not a ./dist/*.js file")
    if (typeof pub.exports !== "object" || pub.exports === null) fail("no publishConfig.exports")
    else {
      for (const key of Object.keys(m.exports)) if (!(key in pub.exports)) fail(`publishConfig.exports lacks "${key}"`)
      for (const [key, value] of Object.entries(m.exports))
        if (value === null && pub.exports[key] !== null) fail(`publishConfig.exports["${key}"] is not null`)
      for (const [key, value] of Object.entries(pub.exports))
        for (const t of targets(value))
          if (key !== "./package.json" && !t.startsWith("./dist/"))
            fail(`publishConfig.exports["${key}"] points at ${t}, not into ./dist`)
    }
  }
  if (hasPub && m.bin !== undefined) {
    const bins = typeof m.bin === "string" ? { [m.name]: m.bin } : m.bin
    const pubBins = typeof pub.bin === "string" ? { [m.name]: pub.bin } : (pub.bin ?? {})
    for (const name of Object.keys(bins))
      if (typeof pubBins[name] !== "string" || !/^\.\/dist\/.*\.js$/.test(pubBins[name]))
        fail(`publishConfig.bin["${name}"] is not a compiled ./dist/*.js file`)
  }
  if (m.peerDependencies?.effect === undefined) fail("effect is not a peer dependency")
  if (m.dependencies?.effect !== undefined) fail("effect is a dependency (it is a peer dependency)")
  if (m.devDependencies?.effect === undefined) fail("effect is not a dev dependency (the workspace installs it)")
  for (const field of ["dependencies", "peerDependencies", "optionalDependencies"])
    for (const [dep, spec] of Object.entries(m[field] ?? {})) {
      if (dep === "tsx") fail(`tsx is in ${field}: the published form runs compiled code`)
      const local = byName.get(dep)
      if (local === undefined) continue
      if (local.manifest.private === true) fail(`${field} has the private package ${dep} (a devDependency at most)`)
      if (!String(spec).startsWith("workspace:")) fail(`${field}: ${dep} is not a workspace: dependency`)
    }

  if (mode !== "--built" || !hasPub) continue
  const need = (file, why) => {
    if (!existsSync(join(dir, file))) fail(`${file} is missing after the build (${why})`)
  }
  if (m.exports !== undefined) {
    need(pub.main, "publishConfig.main")
    need(pub.types, "publishConfig.types")
    for (const [key, value] of Object.entries(pub.exports ?? {})) {
      if (key === "./package.json") continue
      for (const t of targets(value)) {
        if (!t.includes("*")) {
          need(t, `export "${key}"`)
          continue
        }
        // A pattern: every source module it stands for has its compiled file.
        const srcPattern = targets(m.exports[key]).find((s) => s.startsWith("./src/"))
        if (srcPattern === undefined) continue
        const [pre, post] = srcPattern.split("*")
        const srcDir = join(dir, pre)
        if (!existsSync(srcDir)) continue
        for (const f of readdirSync(srcDir))
          if (f.endsWith(post)) need(t.replace("*", f.slice(0, f.length - post.length)), `export "${key}"`)
      }
    }
  }
  for (const file of Object.values(typeof pub.bin === "string" ? { bin: pub.bin } : (pub.bin ?? {}))) {
    need(file, "publishConfig.bin")
    if (existsSync(join(dir, file)) && !readFileSync(join(dir, file), "utf8").startsWith("#!/usr/bin/env node"))
      fail(`${file} does not start with "#!/usr/bin/env node" (put it first in its source)`)
  }
}

if (problems.length > 0) {
  process.stderr.write(`package shape: ${problems.length} problem(s)\n${problems.map((p) => `  ${p}\n`).join("")}`)
  process.stderr.write("every publishable package has the shape the root README describes under Packages\n")
  process.exit(1)
}
process.stdout.write(
  `package shape: ${publishable.length} publishable packages ok${mode === "--built" ? " (built)" : ""}\n`
)
