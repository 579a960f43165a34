/**
 * CPU time and memory of another process, read from Linux's `/proc`. The bench measures processes it
 * started itself; it must not signal or otherwise touch them here.
 */
import { execFileSync } from "node:child_process"
import { readFileSync } from "node:fs"

let ticksPerSecond: number | undefined

/** Kernel clock ticks per second (USER_HZ), the unit of utime/stime in /proc/<pid>/stat. */
const clockTicks = (): number => {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100
    } catch {
      ticksPerSecond = 100
    }
  }
  return ticksPerSecond
}

/** User + system CPU seconds the process has used so far (its own threads, not its children). */
export const cpuSeconds = (pid: number): number => {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
  // The command name may contain spaces and parentheses; the fixed fields start after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  // After the name, field 3 (state) is index 0, so utime (14) and stime (15) are indices 11 and 12.
  return (Number(fields[11]) + Number(fields[12])) / clockTicks()
}

const statusKb = (pid: number, key: string): number | undefined => {
  try {
    const m = new RegExp(`^${key}:\\s+(\\d+)\\s+kB`, "m").exec(readFileSync(`/proc/${pid}/status`, "utf8"))
    return m ? Number(m[1]) : undefined
  } catch {
    return undefined
  }
}

/** Peak resident set size in MB as tracked by the kernel (VmHWM), or undefined once the process is gone. */
export const peakRssMb = (pid: number): number | undefined => {
  const kb = statusKb(pid, "VmHWM")
  return kb === undefined ? undefined : kb / 1024
}

/** Current resident set size in MB (VmRSS). */
export const rssMb = (pid: number): number | undefined => {
  const kb = statusKb(pid, "VmRSS")
  return kb === undefined ? undefined : kb / 1024
}
