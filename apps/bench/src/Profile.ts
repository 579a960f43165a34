/**
 * A self-time summary of a V8 `.cpuprofile` (as written by `node --cpu-prof`): the functions where the
 * profiled process spent its samples, so a bench run can print where time goes without opening a
 * profiler UI. Reads the file only.
 */
import { readdirSync, readFileSync, statSync } from "node:fs"
import { join, relative } from "node:path"

interface ProfileNode {
  readonly id: number
  readonly children?: ReadonlyArray<number>
  readonly callFrame: {
    readonly functionName: string
    readonly url: string
    readonly lineNumber: number
    readonly columnNumber: number
  }
}

export interface Frame {
  readonly name: string
  readonly location: string
  readonly selfPercent: number
}

interface CpuProfile {
  readonly nodes: ReadonlyArray<ProfileNode>
  readonly startTime: number
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

const isProfile = (u: unknown): u is CpuProfile =>
  typeof u === "object" &&
  u !== null &&
  Array.isArray((u as { nodes?: unknown }).nodes) &&
  Array.isArray((u as { samples?: unknown }).samples) &&
  Array.isArray((u as { timeDeltas?: unknown }).timeDeltas)

/** A time window in microseconds of the monotonic clock (`process.hrtime`), which V8 samples share. */
export interface Window {
  readonly startUs: number
  readonly endUs: number
}

/** Now on the clock profile samples are stamped with. */
export const nowUs = (): number => Number(process.hrtime.bigint() / 1000n)

/** Hits per node id, from the samples inside `windows` (all samples when there are none). */
const hitsIn = (p: CpuProfile, windows: ReadonlyArray<Window>): Map<number, number> => {
  const hits = new Map<number, number>()
  let t = p.startTime
  for (let i = 0; i < p.samples.length; i++) {
    t += p.timeDeltas[i] ?? 0
    if (windows.length > 0 && !windows.some((w) => t >= w.startUs && t <= w.endUs)) continue
    const id = p.samples[i]!
    hits.set(id, (hits.get(id) ?? 0) + 1)
  }
  return hits
}

/**
 * The newest main-thread `.cpuprofile` in `dir` written at or after `since` (ms since the epoch). Node
 * names them `CPU.<date>.<time>.<pid>.<thread>.<seq>.cpuprofile`; thread 0 is the main thread, the
 * others are workers such as the module loader's.
 */
export const newest = (dir: string, since: number): string | undefined => {
  const files = readdirSync(dir)
    .filter((f) => /\.0\.\d+\.cpuprofile$/.test(f))
    .map((f) => ({ f: join(dir, f), t: statSync(join(dir, f)).mtimeMs }))
    .filter((x) => x.t >= since)
    .sort((a, b) => b.t - a.t)
  return files[0]?.f
}

/** Samples that are not the process's own work. */
const IDLE = "(idle)"

/**
 * The `top` functions by self samples, merged by name and location, as a share of the busy (non-idle)
 * samples; `busyPercent` is the busy share of all samples.
 */
export const topFrames = (
  file: string,
  top = 20,
  root = process.cwd(),
  windows: ReadonlyArray<Window> = []
): { readonly busyPercent: number; readonly samples: number; readonly frames: ReadonlyArray<Frame> } => {
  const parsed: unknown = JSON.parse(readFileSync(file, "utf8"))
  if (!isProfile(parsed)) throw new Error(`${file} is not a V8 CPU profile`)
  const hitsById = hitsIn(parsed, windows)
  const byFrame = new Map<string, { name: string; location: string; hits: number }>()
  let total = 0
  let idle = 0
  for (const n of parsed.nodes) {
    const hits = hitsById.get(n.id) ?? 0
    if (hits === 0) continue
    total += hits
    if (n.callFrame.functionName === IDLE) {
      idle += hits
      continue
    }
    const { functionName, url, lineNumber, columnNumber } = n.callFrame
    const path = url.startsWith("file://") ? relative(root, new URL(url).pathname) : url
    const location = path === "" ? "" : `${path}:${lineNumber + 1}:${columnNumber + 1}`
    const name = functionName === "" ? "(anonymous)" : functionName
    const key = `${name}@${location}`
    const e = byFrame.get(key)
    if (e === undefined) byFrame.set(key, { name, location, hits })
    else byFrame.set(key, { ...e, hits: e.hits + hits })
  }
  const busy = Math.max(1, total - idle)
  const frames = [...byFrame.values()]
    .sort((a, b) => b.hits - a.hits)
    .slice(0, top)
    .map((e) => ({ name: e.name, location: e.location, selfPercent: (100 * e.hits) / busy }))
  return { busyPercent: (100 * (total - idle)) / Math.max(1, total), samples: total, frames }
}

export const format = (p: ReturnType<typeof topFrames>): string =>
  [
    `${p.samples} samples, busy ${p.busyPercent.toFixed(1)}%; self time as a share of busy samples:`,
    ...p.frames.map((f) => `${f.selfPercent.toFixed(1).padStart(5)}%  ${f.name}  ${f.location}`)
  ].join("\n")

/** One caller chain of a hot function, innermost first, with its share of the busy samples. */
export interface HotPath {
  readonly frames: ReadonlyArray<string>
  readonly selfPercent: number
}

const frameLabel = (n: ProfileNode, root: string): string => {
  const { functionName, url, lineNumber, columnNumber } = n.callFrame
  const path = url.startsWith("file://") ? relative(root, new URL(url).pathname) : url
  const where = path === "" ? "" : ` ${path}:${lineNumber + 1}:${columnNumber + 1}`
  return `${functionName === "" ? "(anonymous)" : functionName}${where}`
}

/**
 * The `top` heaviest call stacks by self samples (inside `windows`), each cut to its `depth` innermost
 * frames, so that a hot leaf such as a buffer copy shows who calls it. Idle, GC and program samples have
 * no stack and are left out.
 */
export const hotPaths = (
  file: string,
  top = 5,
  depth = 8,
  root = process.cwd(),
  windows: ReadonlyArray<Window> = []
): ReadonlyArray<HotPath> => {
  const parsed: unknown = JSON.parse(readFileSync(file, "utf8"))
  if (!isProfile(parsed)) throw new Error(`${file} is not a V8 CPU profile`)
  const hitsById = hitsIn(parsed, windows)
  const byId = new Map(parsed.nodes.map((n) => [n.id, n]))
  const parent = new Map<number, number>()
  for (const n of parsed.nodes) for (const c of n.children ?? []) parent.set(c, n.id)
  let busy = 0
  const byStack = new Map<string, { frames: string[]; hits: number }>()
  for (const n of parsed.nodes) {
    const hits = hitsById.get(n.id) ?? 0
    if (hits === 0 || n.callFrame.functionName === IDLE) continue
    busy += hits
    if (n.callFrame.url === "" && n.callFrame.functionName.startsWith("(")) continue
    const frames: string[] = []
    for (let id: number | undefined = n.id; id !== undefined && frames.length < depth; id = parent.get(id)) {
      const node = byId.get(id)
      if (node === undefined || node.callFrame.functionName === "(root)") break
      frames.push(frameLabel(node, root))
    }
    const key = frames.join("\n")
    const e = byStack.get(key)
    if (e === undefined) byStack.set(key, { frames, hits })
    else e.hits += hits
  }
  return [...byStack.values()]
    .sort((a, b) => b.hits - a.hits)
    .slice(0, top)
    .map((e) => ({ frames: e.frames, selfPercent: (100 * e.hits) / Math.max(1, busy) }))
}

export const formatPaths = (paths: ReadonlyArray<HotPath>): string =>
  paths
    .map(
      (p) =>
        `${p.selfPercent.toFixed(1).padStart(5)}%  ${p.frames.map((f, i) => (i === 0 ? f : `    <- ${f}`)).join("\n")}`
    )
    .join("\n")
