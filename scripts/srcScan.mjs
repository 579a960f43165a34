// Shared by the src checks of `pnpm lint` (fan-out.mjs, control-plane-clock.mjs): the lines of the
// TypeScript sources of some packages that match a pattern in code (comments are ignored), as
// "path:line: text", and the report that fails lint on any (`--warn`: print, exit 0).
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs"
import { dirname, join, relative, resolve } from "node:path"

export const root = resolve(dirname(new URL(import.meta.url).pathname), "..")

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

/**
 * Every line of `packages/<name>/src` (for each of `packages`) whose code matches `pattern`, skipping files
 * `skipFile(path)` and lines `exempt(lines, index)` allows.
 */
export const scan = (packages, pattern, { skipFile = () => false, exempt = () => false } = {}) => {
  const found = []
  for (const name of packages) {
    const src = join(root, "packages", name, "src")
    if (!existsSync(src)) continue
    for (const file of walk(src)) {
      if (skipFile(file)) continue
      const lines = readFileSync(file, "utf8").split("\n")
      lines.forEach((line, i) => {
        if (!exempt(lines, i) && pattern.test(code(line)))
          found.push(`${relative(root, file)}:${i + 1}: ${line.trim()}`)
      })
    }
  }
  return found
}

/** Prints the result; exits 1 on findings unless `--warn` was given. */
export const report = (found, ok, problem) => {
  if (found.length === 0) {
    console.log(ok)
    return
  }
  console.error(problem(found.length))
  for (const f of found) console.error(`  ${f}`)
  if (!process.argv.includes("--warn")) process.exit(1)
}
