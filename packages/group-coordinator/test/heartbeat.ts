import type * as ConsumerGroups from "../src/ConsumerGroups.js"

/**
 * A ConsumerGroupHeartbeat of group `g`: a join (epoch 0) carries the subscription, a rebalance timeout
 * and an empty owned set; a later heartbeat carries none of them. `extra` overrides any field.
 */
export const heartbeat = (
  subscription: { readonly topics: ReadonlyArray<string> } | { readonly regex: string },
  memberId: string,
  memberEpoch: number,
  extra: Partial<ConsumerGroups.HeartbeatRequest> = {}
): ConsumerGroups.HeartbeatRequest => {
  const join = memberEpoch === 0
  return {
    apiVersion: 1,
    groupId: "g",
    memberId,
    memberEpoch,
    instanceId: null,
    rackId: null,
    rebalanceTimeoutMs: join ? 30_000 : -1,
    subscribedTopicNames: join && "topics" in subscription ? subscription.topics : null,
    subscribedTopicRegex: join && "regex" in subscription ? subscription.regex : null,
    serverAssignor: null,
    topicPartitions: join ? [] : null,
    clientId: "c",
    clientHost: "/127.0.0.1",
    ...extra
  }
}
