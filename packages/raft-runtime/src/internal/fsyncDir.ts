import * as fs from "node:fs"

/** fsyncs a directory, so that a rename in it is durable. */
export const fsyncDir = (dir: string): void => {
  let fd: number | undefined
  try {
    fd = fs.openSync(dir, "r")
    fs.fsyncSync(fd)
  } catch {
    // Some platforms cannot open a directory for fsync; the rename is then as durable as it gets.
  } finally {
    if (fd !== undefined) fs.closeSync(fd)
  }
}
