/**
 * ConsumerGroupHeartbeat and ConsumerGroupDescribe between their wire messages and the coordinator's
 * domain values, so that the broker's handlers only route. It decides nothing.
 */
import { type ConsumerGroupDescribe, type ConsumerGroupHeartbeat, Errors } from "@clustermirror/protocol"
import type * as ConsumerGroups from "./ConsumerGroups.js"

export const heartbeatRequest = (
  apiVersion: number,
  r: ConsumerGroupHeartbeat.Request,
  clientId: string,
  clientHost: string
): ConsumerGroups.HeartbeatRequest => ({
  apiVersion,
  groupId: r.groupId,
  memberId: r.memberId,
  memberEpoch: r.memberEpoch,
  instanceId: r.instanceId,
  rackId: r.rackId,
  rebalanceTimeoutMs: r.rebalanceTimeoutMs,
  subscribedTopicNames: r.subscribedTopicNames,
  subscribedTopicRegex: apiVersion >= 1 ? r.subscribedTopicRegex : null,
  serverAssignor: r.serverAssignor,
  topicPartitions: r.topicPartitions,
  clientId,
  clientHost
})

export const heartbeatResponse = (r: ConsumerGroups.HeartbeatResponse): ConsumerGroupHeartbeat.Response => ({
  throttleTimeMs: 0,
  errorCode: r.errorCode,
  errorMessage: r.errorMessage,
  memberId: r.memberId,
  memberEpoch: r.memberEpoch,
  heartbeatIntervalMs: r.heartbeatIntervalMs,
  assignment: r.assignment === null ? null : { topicPartitions: r.assignment }
})

export const notCoordinator = (groupId: string): ConsumerGroups.DescribedGroup => ({
  errorCode: Errors.ErrorCode.NOT_COORDINATOR,
  errorMessage: null,
  groupId,
  groupState: "",
  groupEpoch: -1,
  assignmentEpoch: -1,
  assignorName: "",
  members: []
})

export const describeResponse = (
  groups: ReadonlyArray<ConsumerGroups.DescribedGroup>
): ConsumerGroupDescribe.Response => ({
  throttleTimeMs: 0,
  groups: groups.map((g) => ({
    ...g,
    members: g.members.map((m) => ({
      ...m,
      assignment: { topicPartitions: m.assignment },
      targetAssignment: { topicPartitions: m.targetAssignment },
      memberType: 1
    })),
    authorizedOperations: -2147483648
  }))
})
