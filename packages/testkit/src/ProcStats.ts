/**
 * CPU time and memory of processes, read from Linux's `/proc`: what benchmarks and memory checks
 * measure of the peers they started. Reads only; never signals a process.
 */
import { execFileSync } from "node:child_process"
import { readFileSync } from "node:fs"

let ticksPerSecond: number | undefined

/** Kernel clock ticks per second (USER_HZ), the unit of the times in /proc/<pid>/stat and /proc/stat. */
export const clockTicks = (): number => {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100
    } catch {
      ticksPerSecond = 100
    }
  }
  return ticksPerSecond
}

/** The fixed fields of /proc/<pid>/stat after the command name (which may hold spaces and parentheses). */
const statFields = (pid: number | "self"): ReadonlyArray<string> => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ")
}

/** User + system CPU seconds the process has used so far (its threads), or `undefined` once it is gone. */
export const cpuSeconds = (pid: number): number | undefined => {
  try {
    const f = statFields(pid)
    // After the name, field 3 (state) is index 0: utime (14) and stime (15) are indices 11 and 12.
    return (Number(f[11]) + Number(f[12])) / clockTicks()
  } catch {
    return undefined
  }
}

/** CPU seconds of this process's reaped children (cutime + cstime): the tools it ran to completion. */
export const childrenCpuSeconds = (): number => {
  const f = statFields("self")
  return (Number(f[13]) + Number(f[14])) / clockTicks()
}

/** Busy CPU seconds of the whole machine so far (all of /proc/stat's time but idle and iowait). */
export const machineBusySeconds = (): number => {
  const line = readFileSync("/proc/stat", "utf8").split("\n")[0] ?? ""
  const ticks = line.trim().split(/\s+/).slice(1, 9).map(Number)
  const total = ticks.reduce((x, y) => x + y, 0)
  return (total - (ticks[3] ?? 0) - (ticks[4] ?? 0)) / clockTicks()
}

const statusKb = (pid: number, key: string): number | undefined => {
  try {
    const m = new RegExp(`^${key}:\\s+(\\d+)\\s+kB`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"))
    return m ? Number(m[1]) : undefined
  } catch {
    return undefined
  }
}

/** Current resident set size in MB (VmRSS), or `undefined` once the process is gone. */
export const rssMb = (pid: number): number | undefined => {
  const kb = statusKb(pid, "VmRSS")
  return kb === undefined ? undefined : kb / 1024
}

/** Kernel-tracked peak resident set size in MB (VmHWM), or `undefined` once the process is gone. */
export const peakRssMb = (pid: number): number | undefined => {
  const kb = statusKb(pid, "VmHWM")
  return kb === undefined ? undefined : kb / 1024
}
