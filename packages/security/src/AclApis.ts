/**
 * The ACL APIs: DescribeAcls (29) answered from the authorizer's bindings (the metadata image's),
 * CreateAcls (30) and DeleteAcls (31) forwarded to the controller, which validates and writes the
 * records. Without an authorizer all three answer SECURITY_DISABLED, as Kafka does. DescribeAcls
 * needs DESCRIBE on the cluster, the others ALTER. This module only translates and checks.
 */
import { Acl, type StandardAuthorizer } from "@clustermirror/authorizer"
import { CreateAcls, DeleteAcls, DescribeAcls, Errors } from "@clustermirror/protocol"
import type { Handlers } from "@clustermirror/network/RequestChannel"
import { identityOf } from "./Authorization.js"

const E = Errors.ErrorCode
/** Kafka's message for the ACL APIs on a cluster without an authorizer. */
export const NO_AUTHORIZER = "No Authorizer is configured."

export interface AclApisContext {
  /** The authorizer in force; undefined without `authorizer.class.name`. */
  readonly authorizer: (() => StandardAuthorizer.StandardAuthorizer) | undefined
  readonly createAcls: (request: CreateAcls.Request) => Promise<CreateAcls.Response>
  readonly deleteAcls: (request: DeleteAcls.Request) => Promise<DeleteAcls.Response>
  /** On a controller: CLUSTER_ACTION (a forwarding broker) is enough, as for the controller's other checks. */
  readonly trustClusterAction?: boolean
}

/** Whether the requester may perform `operation` on the cluster (or is trusted as a broker). */
const onCluster = (
  ctx: AclApisContext,
  az: StandardAuthorizer.StandardAuthorizer,
  connection: Parameters<typeof identityOf>[0],
  operation: number
): boolean => {
  const id = identityOf(connection)
  return (
    az.authorize(id, operation, Acl.ResourceType.CLUSTER, Acl.CLUSTER_NAME) ||
    (ctx.trustClusterAction === true &&
      az.authorize(id, Acl.AclOperation.CLUSTER_ACTION, Acl.ResourceType.CLUSTER, Acl.CLUSTER_NAME))
  )
}

/** A DescribeAcls / DeleteAcls filter from its wire fields. */
export const filterOf = (f: {
  readonly resourceTypeFilter: number
  readonly resourceNameFilter: string | null
  readonly patternTypeFilter: number
  readonly principalFilter: string | null
  readonly hostFilter: string | null
  readonly operation: number
  readonly permissionType: number
}): Acl.AclBindingFilter => ({
  resourceType: f.resourceTypeFilter,
  resourceName: f.resourceNameFilter,
  patternType: f.patternTypeFilter,
  principal: f.principalFilter,
  host: f.hostFilter,
  operation: f.operation,
  permissionType: f.permissionType
})

/** Bindings grouped by resource pattern, as DescribeAcls answers them. */
export const byResource = (bindings: ReadonlyArray<Acl.AclBinding>) => {
  const groups = new Map<
    string,
    {
      resourceType: number
      resourceName: string
      patternType: number
      acls: Array<{ principal: string; host: string; operation: number; permissionType: number }>
    }
  >()
  for (const b of bindings) {
    const key = `${b.resourceType}\u0000${b.patternType}\u0000${b.resourceName}`
    let g = groups.get(key)
    if (g === undefined)
      groups.set(
        key,
        (g = { resourceType: b.resourceType, resourceName: b.resourceName, patternType: b.patternType, acls: [] })
      )
    g.acls.push({ principal: b.principal, host: b.host, operation: b.operation, permissionType: b.permissionType })
  }
  return [...groups.values()]
}

export const register = (handlers: Handlers, ctx: AclApisContext): Handlers =>
  handlers
    .register(DescribeAcls.api, (req, request) => {
      const refuse = (errorCode: number, errorMessage: string) => ({
        throttleTimeMs: 0,
        errorCode,
        errorMessage,
        resources: []
      })
      const az = ctx.authorizer?.()
      if (az === undefined) return refuse(E.SECURITY_DISABLED, NO_AUTHORIZER)
      if (!onCluster(ctx, az, req.connection, Acl.AclOperation.DESCRIBE))
        return refuse(E.CLUSTER_AUTHORIZATION_FAILED, Errors.message(E.CLUSTER_AUTHORIZATION_FAILED))
      const filter = filterOf(request)
      const invalid = Acl.invalidFilter(filter)
      if (invalid !== null) return refuse(E.INVALID_REQUEST, invalid)
      return {
        throttleTimeMs: 0,
        errorCode: 0,
        errorMessage: null,
        resources: byResource(az.acls.filter((a) => Acl.matches(filter, a)))
      }
    })
    .register(CreateAcls.api, (req, request) => {
      const all = (errorCode: number, errorMessage: string) => ({
        throttleTimeMs: 0,
        results: request.creations.map(() => ({ errorCode, errorMessage }))
      })
      const az = ctx.authorizer?.()
      if (az === undefined) return all(E.SECURITY_DISABLED, NO_AUTHORIZER)
      if (!onCluster(ctx, az, req.connection, Acl.AclOperation.ALTER))
        return all(E.CLUSTER_AUTHORIZATION_FAILED, Errors.message(E.CLUSTER_AUTHORIZATION_FAILED))
      return ctx.createAcls(request)
    })
    .register(DeleteAcls.api, (req, request) => {
      const all = (errorCode: number, errorMessage: string) => ({
        throttleTimeMs: 0,
        filterResults: request.filters.map(() => ({ errorCode, errorMessage, matchingAcls: [] }))
      })
      const az = ctx.authorizer?.()
      if (az === undefined) return all(E.SECURITY_DISABLED, NO_AUTHORIZER)
      if (!onCluster(ctx, az, req.connection, Acl.AclOperation.ALTER))
        return all(E.CLUSTER_AUTHORIZATION_FAILED, Errors.message(E.CLUSTER_AUTHORIZATION_FAILED))
      return ctx.deleteAcls(request)
    })
