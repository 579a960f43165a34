/**
 * The single node's metadata runtime: the topics image as a projection of a durable journal of
 * metadata records. Writes are serialized: decide → replay into a candidate image (a replay defect
 * aborts with nothing written) → append to the journal (flushed) → publish the new image → answer.
 * Listeners see each change as the records that made it, so partitions open and close by replay.
 */
import * as TopicControl from "./TopicControl.js"

/** Durable, ordered storage of metadata records. */
export interface MetadataJournal {
  /** Appends records atomically and durably (fsync) before returning. */
  readonly append: (records: ReadonlyArray<TopicControl.TopicsRecord>) => void
  /** Every record appended so far, oldest first. */
  readonly load: () => ReadonlyArray<TopicControl.TopicsRecord>
  readonly close: () => void
}

export type MetadataListener = (
  records: ReadonlyArray<TopicControl.TopicsRecord>,
  before: TopicControl.TopicsImage,
  after: TopicControl.TopicsImage
) => void

export class LocalMetadata {
  private current: TopicControl.TopicsImage
  private readonly listeners: MetadataListener[] = []

  constructor(private readonly journal: MetadataJournal) {
    this.current = TopicControl.replayAll(TopicControl.empty, journal.load())
  }

  get image(): TopicControl.TopicsImage {
    return this.current
  }

  /** Registers a listener and replays the current image to it as if it had just been created. */
  subscribe(listener: MetadataListener): void {
    this.listeners.push(listener)
  }

  /** Runs a decide function against the current image and commits its records. */
  write<R>(decide: (image: TopicControl.TopicsImage) => TopicControl.ControlResult<R>): R {
    const before = this.current
    const result = decide(before)
    if (result.records.length === 0) return result.response
    const after = TopicControl.replayAll(before, result.records)
    this.journal.append(result.records)
    this.current = after
    for (const l of this.listeners) l(result.records, before, after)
    return result.response
  }

  close(): void {
    this.journal.close()
  }
}

/** A journal in memory, for tests. */
export const memoryJournal = (): MetadataJournal => {
  const records: TopicControl.TopicsRecord[] = []
  return { append: (rs) => void records.push(...rs), load: () => records, close: () => {} }
}
