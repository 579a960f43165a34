/**
 * NOT_CONTROLLER, as each controller API answers it: the response a controller gives a request it
 * cannot decide because it is not the active controller (a standby of a quorum, or one whose
 * leadership moved while the request waited), with the error where Kafka's clients look for it (the
 * top-level code, or each topic's, resource's, user's or entry's). Kafka's clients and our brokers treat
 * it as retriable: they find the active controller and send the request again.
 *
 * `install` wraps the handlers of these APIs: a handler that fails with an error carrying the
 * NOT_CONTROLLER code (the controller runtime's `ControllerDeposed`, `ControllerClosed`,
 * `MetadataAppendFailed`, or `NoActiveController` from the server) is answered this way instead of
 * closing the connection.
 */
import {
  AllocateProducerIds,
  AlterClientQuotas,
  AlterConfigs,
  AlterPartition,
  AlterPartitionReassignments,
  AlterUserScramCredentials,
  type Api,
  BrokerHeartbeat,
  BrokerRegistration,
  BumpLeaderEpochs,
  CreateAcls,
  CreateClusterMirror,
  CreatePartitions,
  CreateTopics,
  DeleteAcls,
  DeleteClusterMirror,
  DeleteTopics,
  ElectLeaders,
  Errors,
  IncrementalAlterConfigs,
  ListPartitionReassignments,
  PauseMirrorTopics,
  ResumeMirrorTopics,
  type Spec,
  StartMirrorTopics,
  StopMirrorTopics,
  UnregisterBroker,
  UpdateFeatures
} from "@clustermirror/protocol"
import type { Handlers } from "@clustermirror/network/RequestChannel"
import { Data } from "effect"

const NOT_CONTROLLER = Errors.ErrorCode.NOT_CONTROLLER

/** This node is a controller of the quorum but not the active one. */
export class NoActiveController extends Data.TaggedError("NoActiveController")<{
  readonly message: string
  /** The active controller this node knows, -1 when none. */
  readonly leaderId: number
}> {
  readonly errorCode = NOT_CONTROLLER
}

/** Whether a handler's failure means "not the active controller". */
export const isNotController = (e: unknown): e is { readonly errorCode: number; readonly message: string } =>
  typeof e === "object" && e !== null && "errorCode" in e && (e as { errorCode: unknown }).errorCode === NOT_CONTROLLER

const messageOf = (e: { readonly message: string }): string =>
  e.message === "" ? "This is not the active controller." : e.message

type Refusal<Req extends Spec.Fields, Res extends Spec.Fields> = (
  request: Spec.StructType<Req>,
  message: string
) => Spec.StructInput<Res>

const top = (message: string) => ({ throttleTimeMs: 0, errorCode: NOT_CONTROLLER, errorMessage: message })
const item = (message: string) => ({ errorCode: NOT_CONTROLLER, errorMessage: message })

interface Entry {
  readonly api: Api.ApiDef<Spec.Fields, Spec.Fields>
  readonly refuse: Refusal<Spec.Fields, Spec.Fields>
}

const entry = <Req extends Spec.Fields, Res extends Spec.Fields>(
  api: Api.ApiDef<Req, Res>,
  refuse: Refusal<Req, Res>
): Entry => ({ api, refuse }) as unknown as Entry

/** Every controller API that needs the active controller, with its NOT_CONTROLLER answer. */
export const REFUSALS: ReadonlyArray<Entry> = [
  entry(BrokerRegistration.api, (_r, m) => ({ ...top(m), brokerEpoch: -1n })),
  entry(BrokerHeartbeat.api, (_r, m) => ({ ...top(m), isCaughtUp: false, isFenced: true, shouldShutDown: false })),
  entry(AlterPartition.api, (_r, m) => ({ ...top(m), topics: [] })),
  entry(AllocateProducerIds.api, (_r, m) => ({ ...top(m), producerIdStart: -1n, producerIdLen: 0 })),
  entry(CreateTopics.api, (r, m) => ({
    throttleTimeMs: 0,
    topics: r.topics.map((t) => ({ name: t.name, ...item(m) }))
  })),
  entry(DeleteTopics.api, (r, m) => ({
    throttleTimeMs: 0,
    responses: [
      ...r.topicNames.map((name) => ({ name, ...item(m) })),
      ...r.topics.map((t) => ({ name: t.name, topicId: t.topicId, ...item(m) }))
    ]
  })),
  entry(CreatePartitions.api, (r, m) => ({
    throttleTimeMs: 0,
    results: r.topics.map((t) => ({ name: t.name, ...item(m) }))
  })),
  entry(IncrementalAlterConfigs.api, (r, m) => ({
    throttleTimeMs: 0,
    responses: r.resources.map((x) => ({ resourceType: x.resourceType, resourceName: x.resourceName, ...item(m) }))
  })),
  entry(AlterConfigs.api, (r, m) => ({
    throttleTimeMs: 0,
    responses: r.resources.map((x) => ({ resourceType: x.resourceType, resourceName: x.resourceName, ...item(m) }))
  })),
  entry(AlterUserScramCredentials.api, (r, m) => ({
    throttleTimeMs: 0,
    results: [...new Set([...r.deletions, ...r.upsertions].map((u) => u.name))].map((user) => ({ user, ...item(m) }))
  })),
  entry(CreateAcls.api, (r, m) => ({ throttleTimeMs: 0, results: r.creations.map(() => item(m)) })),
  entry(DeleteAcls.api, (r, m) => ({
    throttleTimeMs: 0,
    filterResults: r.filters.map(() => ({ ...item(m), matchingAcls: [] }))
  })),
  entry(AlterClientQuotas.api, (r, m) => ({
    throttleTimeMs: 0,
    entries: r.entries.map((e) => ({ ...item(m), entity: e.entity }))
  })),
  entry(AlterPartitionReassignments.api, (_r, m) => ({ ...top(m), responses: [] })),
  entry(ListPartitionReassignments.api, (_r, m) => ({ ...top(m), topics: [] })),
  // v0 has no top-level code: each partition asked for carries it.
  entry(ElectLeaders.api, (r, m) => ({
    ...top(m),
    replicaElectionResults: (r.topicPartitions ?? []).map((t) => ({
      topic: t.topic,
      partitionResult: t.partitions.map((partitionId) => ({ partitionId, ...item(m) }))
    }))
  })),
  entry(UnregisterBroker.api, (_r, m) => top(m)),
  entry(UpdateFeatures.api, (_r, m) => ({ ...top(m), results: [] })),
  entry(BumpLeaderEpochs.api, (_r, m) => ({ ...top(m), topics: [] })),
  entry(CreateClusterMirror.api, (_r, m) => top(m)),
  entry(DeleteClusterMirror.api, (_r, m) => top(m)),
  entry(StartMirrorTopics.api, (_r, m) => ({ ...top(m), topics: [] })),
  entry(StopMirrorTopics.api, (_r, m) => ({ ...top(m), topics: [] })),
  entry(PauseMirrorTopics.api, (_r, m) => ({ ...top(m), topics: [] })),
  entry(ResumeMirrorTopics.api, (_r, m) => ({ ...top(m), topics: [] }))
]

/**
 * Wraps the registered handlers of `REFUSALS`' APIs: a failure carrying NOT_CONTROLLER is answered with
 * the API's refusal; any other failure passes through.
 */
export const install = (handlers: Handlers): Handlers => {
  for (const { api, refuse } of REFUSALS)
    handlers.wrap(api, (handle) => async (ctx, request) => {
      try {
        return await handle(ctx, request)
      } catch (e) {
        if (isNotController(e)) return refuse(request, messageOf(e))
        throw e
      }
    })
  return handlers
}
