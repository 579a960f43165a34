/**
 * A controller of a quorum (KIP-595 and KIP-631's controller side): the Raft leader of
 * `__cluster_metadata` is the active controller, every other voter a hot standby.
 *
 * - The standby replays each commit of the log as it arrives (`QuorumController.catchUp`), so it always
 *   holds the committed state.
 * - The voter becomes the active controller once it leads and the leader-change record of its own
 *   epoch is committed: everything before it is committed then (a new leader commits nothing of an
 *   earlier epoch but through a record of its own), and the standby has replayed all of it. The
 *   `QuorumController` it starts decides from that state, in that epoch, without reading the log again.
 * - It stops being the active controller when its Raft voter no longer leads in that epoch; the
 *   controller is closed (its queued requests fail with NOT_CONTROLLER) and the standby, which kept
 *   replaying, carries on. Records it appended may still commit under the next leader: the next active
 *   controller replays them like any others.
 *
 * Snapshots (KIP-630), when `snapshots` is on: the active controller writes one every
 * `snapshotEveryRecords` records as a lone controller does, a standby likewise from its replayed image,
 * each into its own voter's log; a voter's commit stream starts with the snapshot its log starts at, and
 * brings the one it installs from the leader when it fell behind the leader's log start: the standby
 * resets to it and replays on. Off by default: a snapshot moves the log start, and brokers cannot load a
 * snapshot from the controller yet (see `RaftMetadataLog`).
 *
 * Leadership is looked at on every commit and every `pollMs`.
 */
import { QuorumController } from "@clustermirror/controller"
import { MetadataProvenance } from "@clustermirror/metadata-log"
import { MetadataRecords } from "@clustermirror/protocol"
import type { RaftRuntime } from "@clustermirror/raft-runtime"
import { Clock, Duration, Effect, Either, Exit, Fiber, Schedule, Stream } from "effect"
import type { Scope } from "effect"
import * as RaftMetadataLog from "./RaftMetadataLog.js"

export interface Options {
  readonly raft: RaftRuntime.RaftRuntime
  /** The controller's options but its log and epoch, which come from the quorum. */
  readonly controller: Omit<QuorumController.QuorumControllerOptions, "log" | "leaderEpoch">
  /** How often leadership is looked at between commits (default 50 ms). */
  readonly pollMs?: number
  /** Snapshots of the voter's log (default off, see above). */
  readonly snapshots?: boolean
}

export interface ControllerQuorum {
  readonly nodeId: number
  /** The active controller, when this voter is it. */
  readonly active: () => QuorumController.QuorumController | undefined
  /** The committed state as this voter replayed it. */
  readonly standby: () => QuorumController.Loaded
  /** The Raft leader this voter knows (-1 when none) and its epoch, as of the last look. */
  readonly leader: () => { readonly leaderId: number; readonly leaderEpoch: number }
  readonly raft: RaftRuntime.RaftRuntime
}

/** Starts the standby, and the active controller whenever this voter leads; all stop with the scope. */
export const make = (options: Options): Effect.Effect<ControllerQuorum, never, Scope.Scope> =>
  Effect.gen(function* () {
    const { raft } = options
    const nodeId = raft.nodeId
    const snapshots = options.snapshots ?? false
    const log = RaftMetadataLog.make(raft, snapshots)
    const say = options.controller.log_ ?? (() => {})
    // A log that starts at a snapshot is replayed once the commit stream brought the snapshot.
    let standby: QuorumController.Loaded = QuorumController.empty()
    let ready = (yield* raft.logStartOffset) === 0
    let snapshotAt = standby.offset
    let leader = yield* raft.leader
    let active: { readonly controller: QuorumController.QuorumController; readonly epoch: number } | undefined
    const lock = yield* Effect.makeSemaphore(1)

    const deactivate = Effect.suspend(() => {
      const current = active
      if (current === undefined) return Effect.void
      active = undefined
      say(`controller ${nodeId} is no longer the active controller (epoch ${current.epoch} ended)`)
      return Effect.promise(() => current.controller.close())
    })

    /** The state a snapshot of the voter's log holds. */
    const reset = (snapshot: RaftRuntime.CommittedSnapshot) =>
      Effect.gen(function* () {
        const records = snapshot.values.map((v) => Either.getOrThrow(MetadataRecords.decode(v)))
        const provenance = MetadataProvenance.make(
          snapshot.endOffset - 1,
          snapshot.epoch,
          yield* Clock.currentTimeMillis
        )
        standby = QuorumController.fromSnapshot({ endOffset: snapshot.endOffset, provenance, records })
        snapshotAt = snapshot.endOffset
        ready = true
        say(`controller ${nodeId} replays the metadata snapshot ending at ${snapshot.endOffset}`)
      })

    const snapshotEvery = options.controller.snapshotEveryRecords ?? 10_000

    /** Replays what committed since the last look, then starts or stops the active controller. */
    const reconcile = lock.withPermits(1)(
      Effect.gen(function* () {
        if (!ready) return
        standby = yield* Effect.orDie(QuorumController.catchUp(log, standby))
        // The active controller snapshots its own image; a standby its replayed one.
        const due = standby.offset - snapshotAt >= snapshotEvery
        if (snapshots && active === undefined && due && !standby.transaction.isOpen) {
          const at = standby.offset
          yield* Effect.catchAll(log.writeSnapshot(standby.image, at), (e) =>
            Effect.sync(() => say(`controller ${nodeId}: writing a metadata snapshot failed: ${e.message}`))
          )
          snapshotAt = at
        }
        leader = yield* raft.leader
        if (active !== undefined && (leader.leaderId !== nodeId || leader.leaderEpoch !== active.epoch))
          yield* deactivate
        const ownEpochCommitted = standby.image.provenance.lastEpoch === leader.leaderEpoch
        if (active === undefined && leader.leaderId === nodeId && ownEpochCommitted) {
          const epoch = leader.leaderEpoch
          const started = yield* Effect.exit(
            QuorumController.QuorumController.make({ ...options.controller, log, leaderEpoch: epoch }, standby)
          )
          if (Exit.isFailure(started)) {
            say(`controller ${nodeId} could not become the active controller in epoch ${epoch}: ${started.cause}`)
            return
          }
          active = { controller: started.value, epoch }
          say(`controller ${nodeId} is the active controller in epoch ${epoch} (committed offset ${standby.offset})`)
        }
      })
    )

    const commits = yield* Effect.forkScoped(
      Stream.runForEach(raft.committed, (item) =>
        item.snapshot === undefined
          ? reconcile
          : Effect.zipRight(lock.withPermits(1)(Effect.zipRight(deactivate, reset(item.snapshot))), reconcile)
      )
    )
    const polls = yield* Effect.forkScoped(
      Effect.repeat(reconcile, Schedule.spaced(Duration.millis(options.pollMs ?? 50)))
    )
    yield* Effect.addFinalizer(() =>
      Effect.zipRight(Fiber.interruptAll([commits, polls]), lock.withPermits(1)(deactivate))
    )
    return {
      nodeId,
      raft,
      active: () => active?.controller,
      standby: () => standby,
      leader: () => leader
    }
  })
