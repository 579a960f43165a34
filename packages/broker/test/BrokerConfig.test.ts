import { describe, expect, it } from "@effect/vitest"
import * as BrokerConfig from "../src/BrokerConfig.js"

describe("BrokerConfig", () => {
  it("has Kafka's leader rebalance defaults", () => {
    expect(BrokerConfig.defaults).toMatchObject({
      autoLeaderRebalanceEnable: true,
      leaderImbalanceCheckIntervalSeconds: 300,
      leaderImbalancePerBrokerPercentage: 10
    })
  })

  it("parses the leader rebalance settings and refuses bad values", () => {
    const c = BrokerConfig.fromProperties(
      new Map([
        ["auto.leader.rebalance.enable", "false"],
        ["leader.imbalance.check.interval.seconds", "5"],
        ["leader.imbalance.per.broker.percentage", "0"]
      ])
    )
    expect(c).toMatchObject({
      autoLeaderRebalanceEnable: false,
      leaderImbalanceCheckIntervalSeconds: 5,
      leaderImbalancePerBrokerPercentage: 0
    })
    expect(() => BrokerConfig.fromProperties(new Map([["leader.imbalance.check.interval.seconds", "0"]]))).toThrow(
      /leader.imbalance.check.interval.seconds/
    )
    expect(() => BrokerConfig.fromProperties(new Map([["leader.imbalance.per.broker.percentage", "101"]]))).toThrow(
      /leader.imbalance.per.broker.percentage/
    )
    expect(() => BrokerConfig.fromProperties(new Map([["auto.leader.rebalance.enable", "yes"]]))).toThrow(
      /auto.leader.rebalance.enable/
    )
  })
})
