/**
 * MetadataPublisher and MetadataLoader: how a node's components follow the metadata. The loader
 * takes committed batches of records (each with its provenance), replays them into a delta on the
 * current image, applies it and hands `(delta, image, manifest)` to every publisher, in the order
 * they were installed. Records between BeginTransactionRecord and EndTransactionRecord are published
 * together, never half; an AbortTransactionRecord drops them, and a transaction still open at the end
 * of what was loaded (a torn tail) stays unpublished until its End or Abort arrives (MetadataTransaction);
 * what came before its Begin is published on its own.
 * A publisher installed late first receives the whole current image.
 *
 * The loader owns the node's current image; it must not decide anything nor read the log itself
 * (`MetadataLog` feeds it). Publishers run inside the loader's lock, one update at a time; a defect
 * in a publisher stops the loader, since a component that missed a delta no longer matches the log.
 */
import type { MetadataRecords } from "@clustermirror/protocol"
import { Effect, Ref } from "effect"
import * as MetadataDelta from "./MetadataDelta.js"
import * as MetadataImage from "./MetadataImage.js"
import * as MetadataProvenance from "./MetadataProvenance.js"
import { TransactionBuffer } from "./MetadataTransaction.js"
import * as Snapshot from "./Snapshot.js"

/** How an update came about. */
export type LoaderManifest =
  | {
      readonly _tag: "LogDelta"
      readonly provenance: MetadataProvenance.MetadataProvenance
      /** Batches merged into this delta. */
      readonly numBatches: number
      readonly numRecords: number
    }
  | {
      /** A snapshot (or a late publisher's catch-up): the delta is from the empty image. */
      readonly _tag: "Snapshot"
      readonly provenance: MetadataProvenance.MetadataProvenance
    }

export interface MetadataPublisher {
  /** For logs and errors. */
  readonly name: string
  /**
   * Called with every published update: the delta (built on the previous image, or on the empty
   * image for a Snapshot manifest, in which case the component resets to `image`), the new image and
   * how it came about.
   */
  readonly onMetadataUpdate: (
    delta: MetadataDelta.MetadataDelta,
    image: MetadataImage.MetadataImage,
    manifest: LoaderManifest
  ) => Effect.Effect<void>
}

/** Records of one batch of the metadata log with the provenance of its last record. */
export interface MetadataBatch {
  readonly records: ReadonlyArray<MetadataRecords.MetadataRecord>
  readonly provenance: MetadataProvenance.MetadataProvenance
}

export interface MetadataLoader {
  /** The last published image. */
  readonly image: Effect.Effect<MetadataImage.MetadataImage>
  /** Adds publishers (after the existing ones); each first receives the current image as a snapshot. */
  readonly installPublishers: (publishers: ReadonlyArray<MetadataPublisher>) => Effect.Effect<void>
  /** Removes a publisher by name. */
  readonly removePublisher: (name: string) => Effect.Effect<void>
  /**
   * Replays committed batches and publishes one delta for them (unless a metadata transaction is
   * still open at the end: then it waits for its End or Abort; an aborted one publishes only the
   * records around it). Batches at or below the last offset already
   * loaded are skipped, so a re-delivered batch is harmless.
   */
  readonly handleCommit: (batches: ReadonlyArray<MetadataBatch>) => Effect.Effect<void>
  /** Replaces the image with a snapshot's and publishes it (manifest `Snapshot`). */
  readonly loadSnapshot: (
    records: ReadonlyArray<MetadataRecords.MetadataRecord>,
    provenance: MetadataProvenance.MetadataProvenance
  ) => Effect.Effect<void>
}

interface Pending {
  readonly delta: MetadataDelta.MetadataDelta
  provenance: MetadataProvenance.MetadataProvenance
  numBatches: number
  numRecords: number
}

interface State {
  image: MetadataImage.MetadataImage
  publishers: ReadonlyArray<MetadataPublisher>
  pending: Pending | undefined
  /** The records of an open metadata transaction, replayed into `pending` at its End. */
  readonly transaction: TransactionBuffer<MetadataRecords.MetadataRecord>
}

const publishAll = (
  publishers: ReadonlyArray<MetadataPublisher>,
  delta: MetadataDelta.MetadataDelta,
  image: MetadataImage.MetadataImage,
  manifest: LoaderManifest
): Effect.Effect<void> =>
  Effect.forEach(publishers, (p) => p.onMetadataUpdate(delta, image, manifest), { discard: true })

/** A delta from the empty image to `image`: what a component that starts from nothing must learn. */
const catchUpDelta = (image: MetadataImage.MetadataImage): MetadataDelta.MetadataDelta =>
  MetadataDelta.make(MetadataImage.empty, Snapshot.imageToRecords(image))

/** A loader starting from `initial` (default: the empty image). */
export const make = (initial: MetadataImage.MetadataImage = MetadataImage.empty): Effect.Effect<MetadataLoader> =>
  Effect.gen(function* () {
    const lock = yield* Effect.makeSemaphore(1)
    const state: State = {
      image: initial,
      publishers: [],
      pending: undefined,
      transaction: new TransactionBuffer()
    }
    const imageRef = yield* Ref.make(initial)
    const serialized = <A>(effect: Effect.Effect<A>): Effect.Effect<A> => lock.withPermits(1)(effect)

    const publish = (delta: MetadataDelta.MetadataDelta, manifest: LoaderManifest): Effect.Effect<void> =>
      Effect.gen(function* () {
        const image = delta.apply(manifest.provenance)
        state.image = image
        yield* Ref.set(imageRef, image)
        yield* publishAll(state.publishers, delta, image, manifest)
      })

    const lastLoadedOffset = (): number => (state.pending ?? state.image).provenance.lastOffset

    const pendingDelta = (): Pending =>
      state.pending ??
      (state.pending = {
        delta: new MetadataDelta.MetadataDelta(state.image),
        provenance: state.image.provenance,
        numBatches: 0,
        numRecords: 0
      })

    const publishPending = (): Effect.Effect<void> =>
      Effect.suspend(() => {
        const pending = state.pending
        if (pending === undefined || state.transaction.isOpen) return Effect.void
        state.pending = undefined
        return publish(pending.delta, {
          _tag: "LogDelta",
          provenance: pending.provenance,
          numBatches: pending.numBatches,
          numRecords: pending.numRecords
        })
      })

    const replayBatch = (batch: MetadataBatch): Effect.Effect<void> =>
      Effect.gen(function* () {
        const { records, provenance } = batch
        const first = provenance.lastOffset - records.length + 1
        for (const [i, record] of records.entries()) {
          // What came before a transaction is published on its own, so that an open transaction
          // never holds back records that are already whole.
          if (record.type === "BeginTransactionRecord" && (state.pending?.delta.recordCount ?? 0) > 0)
            yield* publishPending()
          const pending = pendingDelta()
          for (const ready of state.transaction.offer(record, record)) pending.delta.replay(ready)
          pending.provenance = MetadataProvenance.make(
            first + i,
            provenance.lastEpoch,
            provenance.lastContainedLogTimeMs
          )
        }
        const pending = pendingDelta()
        pending.provenance = provenance
        pending.numBatches++
        pending.numRecords += records.length
      })

    const loader: MetadataLoader = {
      image: Ref.get(imageRef),
      installPublishers: Effect.fn("MetadataLoader.installPublishers")(function* (publishers) {
        yield* serialized(
          Effect.gen(function* () {
            state.publishers = [...state.publishers, ...publishers]
            const image = state.image
            const fresh = MetadataImage.isEmpty(image) && image.provenance.lastOffset < 0
            if (fresh) return
            const manifest: LoaderManifest = { _tag: "Snapshot", provenance: image.provenance }
            yield* publishAll(publishers, catchUpDelta(image), image, manifest)
          })
        )
      }),
      removePublisher: (name) =>
        serialized(
          Effect.sync(() => {
            state.publishers = state.publishers.filter((p) => p.name !== name)
          })
        ),
      handleCommit: Effect.fn("MetadataLoader.handleCommit")(function* (batches) {
        yield* serialized(
          Effect.gen(function* () {
            for (const batch of batches) {
              if (batch.provenance.lastOffset <= lastLoadedOffset()) continue
              yield* replayBatch(batch)
            }
            yield* publishPending()
          })
        )
      }),
      loadSnapshot: Effect.fn("MetadataLoader.loadSnapshot")(function* (records, provenance) {
        yield* serialized(
          Effect.gen(function* () {
            const delta = MetadataDelta.make(MetadataImage.empty, records)
            state.pending = undefined
            state.transaction.reset()
            yield* publish(delta, { _tag: "Snapshot", provenance })
          })
        )
      })
    }
    return loader
  })
