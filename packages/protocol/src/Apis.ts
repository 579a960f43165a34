/**
 * The registry of every API this package defines, by key. Used by servers to dispatch and to build
 * the ApiVersions table, and by tests to cover every version.
 */
import type { ApiDef } from "./Api.js"
import * as ApiVersions from "./apis/ApiVersions.js"
import * as Produce from "./apis/Produce.js"
import * as Fetch from "./apis/Fetch.js"
import * as ListOffsets from "./apis/ListOffsets.js"
import * as Metadata from "./apis/Metadata.js"
import * as OffsetForLeaderEpoch from "./apis/OffsetForLeaderEpoch.js"
import * as CreateTopics from "./apis/CreateTopics.js"
import * as DeleteTopics from "./apis/DeleteTopics.js"
import * as CreatePartitions from "./apis/CreatePartitions.js"
import * as DescribeConfigs from "./apis/DescribeConfigs.js"
import * as AlterConfigs from "./apis/AlterConfigs.js"
import * as IncrementalAlterConfigs from "./apis/IncrementalAlterConfigs.js"
import * as DescribeCluster from "./apis/DescribeCluster.js"
import * as InitProducerId from "./apis/InitProducerId.js"
import * as DescribeTopicPartitions from "./apis/DescribeTopicPartitions.js"
import * as FindCoordinator from "./apis/FindCoordinator.js"
import * as OffsetCommit from "./apis/OffsetCommit.js"
import * as OffsetFetch from "./apis/OffsetFetch.js"
import * as JoinGroup from "./apis/JoinGroup.js"
import * as SyncGroup from "./apis/SyncGroup.js"
import * as Heartbeat from "./apis/Heartbeat.js"
import * as LeaveGroup from "./apis/LeaveGroup.js"
import * as ListGroups from "./apis/ListGroups.js"
import * as DescribeGroups from "./apis/DescribeGroups.js"
import * as DeleteGroups from "./apis/DeleteGroups.js"
import * as OffsetDelete from "./apis/OffsetDelete.js"
import * as SaslHandshake from "./apis/SaslHandshake.js"
import * as SaslAuthenticate from "./apis/SaslAuthenticate.js"
import * as DescribeAcls from "./apis/DescribeAcls.js"
import * as CreateAcls from "./apis/CreateAcls.js"
import * as DeleteAcls from "./apis/DeleteAcls.js"
import * as DescribeClientQuotas from "./apis/DescribeClientQuotas.js"
import * as CreateDelegationToken from "./apis/CreateDelegationToken.js"
import * as RenewDelegationToken from "./apis/RenewDelegationToken.js"
import * as ExpireDelegationToken from "./apis/ExpireDelegationToken.js"
import * as DescribeDelegationToken from "./apis/DescribeDelegationToken.js"
import * as AlterClientQuotas from "./apis/AlterClientQuotas.js"
import * as ListConfigResources from "./apis/ListConfigResources.js"
import * as DescribeUserScramCredentials from "./apis/DescribeUserScramCredentials.js"
import * as AlterUserScramCredentials from "./apis/AlterUserScramCredentials.js"
import * as EndTxn from "./apis/EndTxn.js"
import * as AddPartitionsToTxn from "./apis/AddPartitionsToTxn.js"
import * as AddOffsetsToTxn from "./apis/AddOffsetsToTxn.js"
import * as TxnOffsetCommit from "./apis/TxnOffsetCommit.js"
import * as DeleteRecords from "./apis/DeleteRecords.js"
import * as WriteTxnMarkers from "./apis/WriteTxnMarkers.js"
import * as DescribeProducers from "./apis/DescribeProducers.js"
import * as CreateClusterMirror from "./apis/CreateClusterMirror.js"
import * as StartMirrorTopics from "./apis/StartMirrorTopics.js"
import * as StopMirrorTopics from "./apis/StopMirrorTopics.js"
import * as ListClusterMirrors from "./apis/ListClusterMirrors.js"
import * as DescribeClusterMirrors from "./apis/DescribeClusterMirrors.js"
import * as ReadMirrorStates from "./apis/ReadMirrorStates.js"
import * as WriteMirrorStates from "./apis/WriteMirrorStates.js"
import * as PauseMirrorTopics from "./apis/PauseMirrorTopics.js"
import * as ResumeMirrorTopics from "./apis/ResumeMirrorTopics.js"
import * as DeleteClusterMirror from "./apis/DeleteClusterMirror.js"
import * as BumpLeaderEpochs from "./apis/BumpLeaderEpochs.js"
import * as RecoverMirrorTopics from "./apis/RecoverMirrorTopics.js"
import * as BrokerRegistration from "./apis/BrokerRegistration.js"
import * as BrokerHeartbeat from "./apis/BrokerHeartbeat.js"
import * as UnregisterBroker from "./apis/UnregisterBroker.js"
import * as AlterPartition from "./apis/AlterPartition.js"
import * as AllocateProducerIds from "./apis/AllocateProducerIds.js"
import * as Envelope from "./apis/Envelope.js"
import * as UpdateFeatures from "./apis/UpdateFeatures.js"
import * as DescribeQuorum from "./apis/DescribeQuorum.js"
import * as Vote from "./apis/Vote.js"
import * as BeginQuorumEpoch from "./apis/BeginQuorumEpoch.js"
import * as EndQuorumEpoch from "./apis/EndQuorumEpoch.js"
import * as FetchSnapshot from "./apis/FetchSnapshot.js"
import * as ElectLeaders from "./apis/ElectLeaders.js"
import * as AlterPartitionReassignments from "./apis/AlterPartitionReassignments.js"
import * as ListPartitionReassignments from "./apis/ListPartitionReassignments.js"
import * as DescribeTransactions from "./apis/DescribeTransactions.js"
import * as ListTransactions from "./apis/ListTransactions.js"
import * as DescribeLogDirs from "./apis/DescribeLogDirs.js"
import * as AlterReplicaLogDirs from "./apis/AlterReplicaLogDirs.js"
import * as ConsumerGroupHeartbeat from "./apis/ConsumerGroupHeartbeat.js"
import * as ConsumerGroupDescribe from "./apis/ConsumerGroupDescribe.js"

// biome-ignore lint/suspicious/noExplicitAny: a registry of heterogeneous APIs
export type AnyApi = ApiDef<any, any>

export const all: ReadonlyArray<AnyApi> = [
  ApiVersions.api,
  Produce.api,
  Fetch.api,
  ListOffsets.api,
  Metadata.api,
  OffsetForLeaderEpoch.api,
  CreateTopics.api,
  DeleteTopics.api,
  CreatePartitions.api,
  DescribeConfigs.api,
  AlterConfigs.api,
  IncrementalAlterConfigs.api,
  DescribeCluster.api,
  InitProducerId.api,
  DescribeTopicPartitions.api,
  FindCoordinator.api,
  OffsetCommit.api,
  OffsetFetch.api,
  JoinGroup.api,
  SyncGroup.api,
  Heartbeat.api,
  LeaveGroup.api,
  ListGroups.api,
  DescribeGroups.api,
  DeleteGroups.api,
  OffsetDelete.api,
  SaslHandshake.api,
  SaslAuthenticate.api,
  DescribeAcls.api,
  CreateAcls.api,
  DeleteAcls.api,
  DescribeClientQuotas.api,
  CreateDelegationToken.api,
  RenewDelegationToken.api,
  ExpireDelegationToken.api,
  DescribeDelegationToken.api,
  AlterClientQuotas.api,
  ListConfigResources.api,
  DescribeUserScramCredentials.api,
  AlterUserScramCredentials.api,
  EndTxn.api,
  AddPartitionsToTxn.api,
  AddOffsetsToTxn.api,
  TxnOffsetCommit.api,
  DeleteRecords.api,
  WriteTxnMarkers.api,
  DescribeProducers.api,
  CreateClusterMirror.api,
  StartMirrorTopics.api,
  StopMirrorTopics.api,
  ListClusterMirrors.api,
  DescribeClusterMirrors.api,
  ReadMirrorStates.api,
  WriteMirrorStates.api,
  PauseMirrorTopics.api,
  ResumeMirrorTopics.api,
  DeleteClusterMirror.api,
  BumpLeaderEpochs.api,
  RecoverMirrorTopics.api,
  BrokerRegistration.api,
  BrokerHeartbeat.api,
  UnregisterBroker.api,
  AlterPartition.api,
  AllocateProducerIds.api,
  Envelope.api,
  UpdateFeatures.api,
  DescribeQuorum.api,
  Vote.api,
  BeginQuorumEpoch.api,
  EndQuorumEpoch.api,
  FetchSnapshot.api,
  ElectLeaders.api,
  AlterPartitionReassignments.api,
  ListPartitionReassignments.api,
  DescribeTransactions.api,
  DescribeLogDirs.api,
  AlterReplicaLogDirs.api,
  ConsumerGroupHeartbeat.api,
  ConsumerGroupDescribe.api,
  ListTransactions.api
]

export const byKey: ReadonlyMap<number, AnyApi> = new Map(all.map((a) => [a.key, a]))
