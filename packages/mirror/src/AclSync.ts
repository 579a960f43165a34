/**
 * The ACL sync of KIP-1279 §5.9 step c, run by the mirror-coordinator broker on every refresh: the source's
 * ACL bindings (DescribeAcls with the ANY filter) that one of the mirror's `mirror.acls.include` rules
 * matches are created on the destination, and every destination binding not in that filtered source set
 * is deleted (DeleteAcls with its exact filter), except bindings on CLUSTER_MIRROR resources (type 8): those
 * are the destination's own (who may operate its mirrors) and are never copied, created or deleted. The
 * bindings of the destination admin's own principal (`mirror.admin.listener.name`, when the broker knows
 * it) are kept the same way: they are what lets the sync run on the destination.
 *
 * An empty `mirror.acls.include` turns the sync off: nothing is copied and nothing deleted. A source
 * or destination without an authorizer (DescribeAcls answers SECURITY_DISABLED), or any other failure
 * to describe either side, stops the run before anything changes. Errors are reported once while they
 * last (kind `acls`: logged and counted in the sync-error metric); the last result of each mirror is kept
 * for DescribeClusterMirrors.
 *
 * Deciding (`aclSyncPlan`) is pure; the task does the I/O through `internal/SyncRequests`.
 */
import { Acl, AclRules } from "@clustermirror/authorizer"
import type { DescribeClusterMirrors } from "@clustermirror/protocol"
import { Errors } from "@clustermirror/protocol"
import * as Clock from "./internal/Clock.js"
import { createAcls, deleteAcls, describeAcls, SyncRequestError } from "./internal/SyncRequests.js"
import type { CoordinatorContext, CoordinatorTask } from "./MirrorRefresh.js"

/** The sync-error kind of the ACL sync. */
export const KIND = "acls"
export const INCLUDE = "mirror.acls.include"
/** `mirror.acls.include`'s default (§7.3): every binding. */
export const DEFAULT_INCLUDE = "*"

// ---------------------------------------------------------------------------------------------------
// The plan

/** The identity of a binding: every field. */
export const keyOf = (b: Acl.AclBinding): string =>
  [b.resourceType, b.patternType, b.operation, b.permissionType, b.resourceName, b.principal, b.host].join("\u0000")

/** Whether a binding is on a CLUSTER_MIRROR resource (never synced). */
export const isClusterMirror = (b: Acl.AclBinding): boolean => b.resourceType === Acl.ResourceType.CLUSTER_MIRROR

/** Whether a binding is the destination's own: on CLUSTER_MIRROR, or of the destination admin's principal. */
export const isKept = (b: Acl.AclBinding, ownPrincipal: string | null = null): boolean =>
  isClusterMirror(b) || (ownPrincipal !== null && b.principal === ownPrincipal)

/**
 * The source bindings the destination should have: those a rule includes, not kept (`isKept`), and valid
 * to create (a type or operation this cluster does not know is left out), deduplicated, in source order.
 */
export const wanted = (
  source: ReadonlyArray<Acl.AclBinding>,
  rules: ReadonlyArray<AclRules.AclRule>,
  ownPrincipal: string | null = null
): ReadonlyArray<Acl.AclBinding> => {
  const out = new Map<string, Acl.AclBinding>()
  for (const b of source)
    if (!isKept(b, ownPrincipal) && Acl.invalidBinding(b) === null && AclRules.included(rules, b)) out.set(keyOf(b), b)
  return [...out.values()]
}

export interface AclSyncPlan {
  /** The filtered source set (what the destination has after the plan, besides its CLUSTER_MIRROR ACLs). */
  readonly wanted: ReadonlyArray<Acl.AclBinding>
  /** Filtered source bindings the destination lacks. */
  readonly create: ReadonlyArray<Acl.AclBinding>
  /** Destination bindings not in the filtered source set, except the kept ones. */
  readonly delete: ReadonlyArray<Acl.AclBinding>
}

/**
 * What to create and delete so that the destination's ACLs are the filtered source set plus its kept ACLs
 * (CLUSTER_MIRROR ones, and those of `ownPrincipal`, the destination admin's principal, when known).
 */
export const aclSyncPlan = (
  source: ReadonlyArray<Acl.AclBinding>,
  destination: ReadonlyArray<Acl.AclBinding>,
  rules: ReadonlyArray<AclRules.AclRule>,
  ownPrincipal: string | null = null
): AclSyncPlan => {
  const want = wanted(source, rules, ownPrincipal)
  const wantKeys = new Set(want.map(keyOf))
  const have = new Set(destination.map(keyOf))
  const remove = new Map<string, Acl.AclBinding>()
  for (const b of destination) if (!isKept(b, ownPrincipal) && !wantKeys.has(keyOf(b))) remove.set(keyOf(b), b)
  return { wanted: want, create: want.filter((b) => !have.has(keyOf(b))), delete: [...remove.values()] }
}

// ---------------------------------------------------------------------------------------------------
// Status

export type AclSyncState = "SYNCED" | "FAILED" | "DISABLED"

export interface AclSyncStatus {
  readonly state: AclSyncState
  /** The error of a failed run, else null. */
  readonly error: string | null
  /** When this status was recorded (ms). */
  readonly timeMs: number
  /** When a run last completed (ms); -1 never. */
  readonly lastSyncedMs: number
  /** The size of the filtered source set at the last completed run. */
  readonly synced: number
  /** Bindings the last completed run created and deleted on the destination. */
  readonly created: number
  readonly deleted: number
}

/** The latest ACL sync status of each mirror on this broker. */
export class AclSyncStatusStore {
  private readonly byMirror = new Map<string, AclSyncStatus>()

  status(mirror: string): AclSyncStatus | undefined {
    return this.byMirror.get(mirror)
  }

  set(mirror: string, status: AclSyncStatus): void {
    this.byMirror.set(mirror, status)
  }

  /** Forgets mirrors not in `mirrors`. */
  retain(mirrors: ReadonlySet<string>): void {
    for (const m of [...this.byMirror.keys()]) if (!mirrors.has(m)) this.byMirror.delete(m)
  }
}

type WireMirror = DescribeClusterMirrors.Response["mirrors"][number]

/** A DescribeClusterMirrors answer with this broker's ACL sync status of each described mirror it has one for. */
export const withAclSync = (
  response: DescribeClusterMirrors.Response,
  store: AclSyncStatusStore
): DescribeClusterMirrors.Response => ({
  ...response,
  mirrors: response.mirrors.map((m): WireMirror => {
    const s = m.errorCode !== 0 ? undefined : store.status(m.mirrorName)
    return s === undefined
      ? m
      : {
          ...m,
          aclSyncStatuses: [
            {
              state: s.state,
              detail: s.error,
              timeMs: BigInt(s.timeMs),
              lastSyncedMs: BigInt(s.lastSyncedMs),
              synced: s.synced,
              created: s.created,
              deleted: s.deleted
            }
          ]
        }
  })
})

// ---------------------------------------------------------------------------------------------------
// The task

export interface AclSyncOptions {
  readonly store: AclSyncStatusStore
  readonly now?: () => number
  /** The principal the destination admin authenticates as (`User:<name>`), when known: its bindings are kept. */
  readonly ownPrincipal?: string | null
}

const messageOf = (e: unknown) => (e instanceof Error ? e.message : String(e))

const describeFailure = (side: string, e: unknown): string =>
  e instanceof SyncRequestError && e.errorCode === Errors.ErrorCode.SECURITY_DISABLED
    ? `the ${side} cluster has no authorizer (DescribeAcls: ${Errors.message(e.errorCode)}); nothing synced or deleted`
    : `describing the ${side} ACLs: ${messageOf(e)}`

/** Runs one ACL sync of a mirror and records its status (see the module doc). */
export const syncAcls = async (ctx: CoordinatorContext, options: AclSyncOptions): Promise<void> => {
  const now = options.now ?? Clock.now
  const store = options.store
  const previous = store.status(ctx.mirror)
  const lastSyncedMs = previous?.lastSyncedMs ?? -1
  const failed = (error: string) => {
    // Reported once while it lasts: a source without an authorizer would otherwise log on every tick.
    if (previous?.state !== "FAILED" || previous.error !== error) ctx.syncError(KIND, `mirror ${ctx.mirror}: ${error}`)
    store.set(ctx.mirror, {
      state: "FAILED",
      error,
      timeMs: now(),
      lastSyncedMs,
      synced: previous?.synced ?? 0,
      created: previous?.created ?? 0,
      deleted: previous?.deleted ?? 0
    })
  }

  const parsed = AclRules.parse(ctx.configs.get(INCLUDE) ?? DEFAULT_INCLUDE)
  if (parsed._tag === "Invalid") return failed(`${INCLUDE}: invalid rule '${parsed.rule}': ${parsed.reason}`)
  if (parsed.rules.length === 0) {
    store.set(ctx.mirror, {
      state: "DISABLED",
      error: null,
      timeMs: now(),
      lastSyncedMs,
      synced: 0,
      created: 0,
      deleted: 0
    })
    return
  }

  let source: ReadonlyArray<Acl.AclBinding>
  try {
    source = await describeAcls(ctx.source)
  } catch (e) {
    return failed(describeFailure("source", e))
  }
  let destination: ReadonlyArray<Acl.AclBinding>
  try {
    destination = await describeAcls(ctx.destination)
  } catch (e) {
    return failed(describeFailure("destination", e))
  }

  const plan = aclSyncPlan(source, destination, parsed.rules, options.ownPrincipal ?? null)
  const errors: Array<string> = []
  try {
    // Create first: a binding replaced by another never leaves a gap without either.
    errors.push(...(await createAcls(ctx.destination, plan.create)))
    errors.push(...(await deleteAcls(ctx.destination, plan.delete)))
  } catch (e) {
    errors.push(messageOf(e))
  }
  if (errors.length > 0) return failed(errors.join("; "))
  const time = now()
  store.set(ctx.mirror, {
    state: "SYNCED",
    error: null,
    timeMs: time,
    lastSyncedMs: time,
    synced: plan.wanted.length,
    created: plan.create.length,
    deleted: plan.delete.length
  })
}

/** The ACL sync as a coordinator task recording into `store`. */
export const aclsTask = (options: AclSyncOptions): CoordinatorTask => ({
  name: KIND,
  run: (ctx) => syncAcls(ctx, options)
})
