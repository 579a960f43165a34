/**
 * A mirror operation's two phases (KIP-1279 §5.8) as the broker that receives it runs them: phase 1 is the
 * broker's validation against the mirror states it knows (a refusal answers at once), phase 2 the
 * controller with the validation's metadata offset as a stamp. The controller refuses a stamp older than
 * a mirror-state change it committed (INVALID_CLUSTER_MIRROR_STATES): the broker then catches up with the
 * metadata log and validates again, so that an operation sent while it lagged goes through once it caught
 * up; after `STALE_VALIDATION_ATTEMPTS` the controller's refusal is the answer.
 */
import type { MirrorMetadataManager } from "@clustermirror/coordinator"
import { Errors } from "@clustermirror/protocol"

/** How often a mirror operation is validated again after the controller found its stamp stale. */
export const STALE_VALIDATION_ATTEMPTS = 5

/** The steps of one operation; the broker implements them. */
export interface Steps<Res> {
  /** Phase 1 on this broker. */
  readonly validate: () => Promise<MirrorMetadataManager.Validation>
  /** The answer to a refused validation. */
  readonly refuse: (errorCode: number, errorMessage: string) => Res
  /** Phase 2: the controller, with the stamp. */
  readonly submit: (stateValidationOffset: number) => Promise<Res>
  readonly errorCodeOf: (response: Res) => number
  /** Resolves once this broker loaded what the controller had committed. */
  readonly catchUp: () => Promise<void>
  /** Called before each validation again after a stale stamp. */
  readonly onStale?: () => void
}

/** Runs an operation's two phases, validating again (up to the limit) while the controller finds the stamp stale. */
export const validated = async <Res>(steps: Steps<Res>): Promise<Res> => {
  for (let attempt = 1; ; attempt++) {
    const v = await steps.validate()
    if (v._tag === "Invalid") return steps.refuse(v.errorCode, v.errorMessage)
    const response = await steps.submit(v.stateValidationOffset)
    await steps.catchUp()
    const errorCode = steps.errorCodeOf(response)
    if (errorCode !== Errors.ErrorCode.INVALID_CLUSTER_MIRROR_STATES || attempt >= STALE_VALIDATION_ATTEMPTS)
      return response
    steps.onStale?.()
  }
}
