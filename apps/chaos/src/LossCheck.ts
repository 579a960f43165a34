/**
 * The acknowledged-record loss check: every record the producer saw acknowledged (acks=all) at a
 * (topic, partition, offset) must be read back at that offset with the same value. A record read back
 * with another value is "changed"; one whose offset is not there at all is "lost". Records that were
 * never acknowledged (timeouts, errors, retried duplicates) are not counted either way.
 *
 * Pure: the records read back are the caller's (the campaign consumes with kcat).
 */

export interface Acked {
  readonly topic: string
  readonly partition: number
  readonly offset: number
  readonly value: string
}

/** What a partition holds, by offset, as read back from the beginning. */
export type PartitionContents = ReadonlyMap<number, string>

export interface Changed {
  readonly acked: Acked
  readonly found: string
}

export interface LossReport {
  /** Acknowledged records checked. */
  readonly checked: number
  readonly lost: ReadonlyArray<Acked>
  readonly changed: ReadonlyArray<Changed>
}

/** The key of a partition in the map of contents. */
export const partitionKey = (topic: string, partition: number): string => `${topic}-${partition}`

/** Checks every acknowledged record against what the partitions hold. */
export const check = (acked: ReadonlyArray<Acked>, contents: ReadonlyMap<string, PartitionContents>): LossReport => {
  const lost: Acked[] = []
  const changed: Changed[] = []
  for (const a of acked) {
    const found = contents.get(partitionKey(a.topic, a.partition))?.get(a.offset)
    if (found === undefined) lost.push(a)
    else if (found !== a.value) changed.push({ acked: a, found })
  }
  return { checked: acked.length, lost, changed }
}

/** Parses kcat's `-f '%o %s\n'` output (offset, space, value per line) into a partition's contents. */
export const parseOffsetsAndValues = (text: string): PartitionContents => {
  const out = new Map<number, string>()
  for (const line of text.split("\n")) {
    if (line === "") continue
    const i = line.indexOf(" ")
    if (i <= 0) continue
    const offset = Number(line.slice(0, i))
    if (Number.isInteger(offset)) out.set(offset, line.slice(i + 1))
  }
  return out
}

/** A readable summary of the first few problems. */
export const summary = (r: LossReport, limit = 10): ReadonlyArray<string> => [
  ...r.lost
    .slice(0, limit)
    .map((a) => `lost: ${partitionKey(a.topic, a.partition)} offset ${a.offset} (value ${a.value})`),
  ...r.changed
    .slice(0, limit)
    .map(
      (c) =>
        `changed: ${partitionKey(c.acked.topic, c.acked.partition)} offset ${c.acked.offset}: acked ${c.acked.value}, found ${c.found}`
    )
]
