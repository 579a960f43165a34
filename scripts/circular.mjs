#!/usr/bin/env node
// Fails when the import graph of packages/*/src and apps/*/src has a cycle, at module level or between
// workspace packages. Relative imports written as `./x.js` resolve to `./x.ts`.
import { readdirSync, readFileSync, statSync, existsSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"

const root = resolve(dirname(new URL(import.meta.url).pathname), "..")
const importRe = /(?:^|\n)\s*(?:import|export)\s[^;]*?from\s+["']([^"']+)["']|import\(\s*["']([^"']+)["']\s*\)/g

const packages = new Map()
for (const group of ["packages", "apps"]) {
  const dir = join(root, group)
  if (!existsSync(dir)) continue
  for (const name of readdirSync(dir)) {
    const pj = join(dir, name, "package.json")
    if (!existsSync(pj)) continue
    packages.set(JSON.parse(readFileSync(pj, "utf8")).name, join(dir, name))
  }
}

const walk = (dir) =>
  readdirSync(dir).flatMap((f) => {
    const p = join(dir, f)
    return statSync(p).isDirectory() ? walk(p) : p.endsWith(".ts") ? [p] : []
  })

const edges = new Map()
const pkgEdges = new Map()
for (const [pkg, dir] of packages) {
  const src = join(dir, "src")
  if (!existsSync(src)) continue
  pkgEdges.set(pkg, new Set())
  for (const file of walk(src)) {
    const deps = new Set()
    const text = readFileSync(file, "utf8")
    for (const m of text.matchAll(importRe)) {
      const spec = m[1] ?? m[2]
      if (spec.startsWith(".")) {
        const target = resolve(dirname(file), spec.replace(/\.js$/, ".ts"))
        if (existsSync(target)) deps.add(target)
      } else {
        const name = spec.split("/").slice(0, 2).join("/")
        if (packages.has(name) && name !== pkg) pkgEdges.get(pkg).add(name)
      }
    }
    edges.set(file, deps)
  }
}

const findCycle = (graph) => {
  const state = new Map()
  const stack = []
  const visit = (n) => {
    state.set(n, 1)
    stack.push(n)
    for (const d of graph.get(n) ?? []) {
      if (state.get(d) === 1) return [...stack.slice(stack.indexOf(d)), d]
      if (!state.has(d)) {
        const c = visit(d)
        if (c) return c
      }
    }
    stack.pop()
    state.set(n, 2)
    return undefined
  }
  for (const n of graph.keys())
    if (!state.has(n)) {
      const c = visit(n)
      if (c) return c
    }
  return undefined
}

const moduleCycle = findCycle(edges)
const packageCycle = findCycle(pkgEdges)
if (moduleCycle) console.error("import cycle: " + moduleCycle.map((f) => relative(root, f)).join(" -> "))
if (packageCycle) console.error("package cycle: " + packageCycle.join(" -> "))
if (moduleCycle || packageCycle) process.exit(1)
console.log(`no import cycles (${edges.size} modules, ${pkgEdges.size} packages)`)
