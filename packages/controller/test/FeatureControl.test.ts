import { describe, expect, it } from "@effect/vitest"
import { MetadataRecords, type UpdateFeatures } from "@clustermirror/protocol"
import { Either } from "effect"
import * as ClusterControl from "../src/ClusterControl.js"
import type * as ControllerState from "../src/ControllerState.js"
import { bootstrap, given } from "../src/ControllerTest.js"
import * as FeatureControl from "../src/FeatureControl.js"
import { registerRecord, SUPPORTED_FEATURES } from "./clusterFixtures.js"

const level = (name: string, featureLevel: number) => MetadataRecords.make("FeatureLevelRecord", { name, featureLevel })

const update = (
  updates: ReadonlyArray<{ feature: string; maxVersionLevel: number; upgradeType?: number; allowDowngrade?: boolean }>,
  validateOnly = false
): UpdateFeatures.Request => ({
  timeoutMs: 60000,
  featureUpdates: updates.map((u) => ({
    feature: u.feature,
    maxVersionLevel: u.maxVersionLevel,
    upgradeType: u.upgradeType ?? 1,
    allowDowngrade: u.allowDowngrade ?? false
  })),
  validateOnly
})

const decide = (request: UpdateFeatures.Request) => (s: ControllerState.ControllerState) =>
  FeatureControl.updateFeatures(s.features, request, {
    brokerSupported: ClusterControl.brokerSupportedFeatures(s.cluster)
  })

const mirrorOff = given([level("metadata.version", 30), level("mirror.version", 0), registerRecord(1, 2n)])

describe("FeatureControl.bootstrapRecords", () => {
  it("writes metadata.version and mirror.version, by default the latest with mirroring on", () => {
    expect(bootstrap).toEqual([level("metadata.version", 30), level("mirror.version", 1)])
    const s = given(bootstrap).state.features
    expect(FeatureControl.isMirrorEnabled(s)).toBe(true)
    expect([...FeatureControl.finalizedFeatures(s)]).toEqual([
      ["mirror.version", 1],
      ["metadata.version", 30]
    ])
  })

  it("can start with mirroring off", () => {
    const records = Either.getOrThrow(FeatureControl.bootstrapRecords({ mirrorVersion: 0, metadataVersion: 21 }))
    const s = given(records).state.features
    expect(FeatureControl.isMirrorEnabled(s)).toBe(false)
    expect(s.metadataVersion).toBe(21)
  })

  it("refuses levels the controller cannot run and broken dependencies", () => {
    expect(Either.isLeft(FeatureControl.bootstrapRecords({ metadataVersion: 31 }))).toBe(true)
    expect(Either.isLeft(FeatureControl.bootstrapRecords({ mirrorVersion: 2 }))).toBe(true)
    const dep = FeatureControl.bootstrapRecords({ metadataVersion: 21, mirrorVersion: 1 })
    expect(Either.isLeft(dep) && dep.left.message).toBe("mirror.version 1 requires metadata.version 30 or higher.")
  })
})

describe("FeatureControl.updateFeatures", () => {
  it("enables mirror.version with a FeatureLevelRecord", () => {
    const after = mirrorOff
      .when(decide(update([{ feature: "mirror.version", maxVersionLevel: 1 }])))
      .then([level("mirror.version", 1)], undefined)
    expect(FeatureControl.isMirrorEnabled(after.state.features)).toBe(true)
  })

  it("disables it with a safe downgrade to 0, which removes the feature", () => {
    const after = given(bootstrap)
      .when(decide(update([{ feature: "mirror.version", maxVersionLevel: 0, upgradeType: 2 }])))
      .then([level("mirror.version", 0)], undefined)
    expect(after.state.features.finalized.has("mirror.version")).toBe(false)
  })

  it("takes v0's allowDowngrade as a safe downgrade", () => {
    given(bootstrap)
      .when(decide(update([{ feature: "mirror.version", maxVersionLevel: 0, allowDowngrade: true }])))
      .then([level("mirror.version", 0)], undefined)
  })

  it("validateOnly writes nothing", () => {
    mirrorOff.when(decide(update([{ feature: "mirror.version", maxVersionLevel: 1 }], true))).then([], undefined)
  })

  it("fails with INVALID_UPDATE_VERSION for a downgrade without a downgrade type", () => {
    given(bootstrap)
      .when(decide(update([{ feature: "mirror.version", maxVersionLevel: 0 }])))
      .thenFails({
        _tag: "InvalidUpdateVersion",
        message:
          "Invalid update version 0 for feature mirror.version. Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade."
      })
  })

  it("fails for an upgrade marked as a downgrade, an unknown upgrade type, a negative level", () => {
    mirrorOff.when(decide(update([{ feature: "mirror.version", maxVersionLevel: 1, upgradeType: 2 }]))).thenFails({
      _tag: "InvalidUpdateVersion",
      message: "Invalid update version 1 for feature mirror.version. Can't downgrade to a newer version."
    })
    mirrorOff.when(decide(update([{ feature: "mirror.version", maxVersionLevel: 1, upgradeType: 9 }]))).thenFails({
      _tag: "InvalidUpdateVersion",
      message:
        "Invalid update version 1 for feature mirror.version. The controller does not support the given upgrade type."
    })
    mirrorOff
      .when(decide(update([{ feature: "mirror.version", maxVersionLevel: -1, upgradeType: 2 }])))
      .thenFails({ _tag: "InvalidUpdateVersion" })
  })

  it("fails for a level the controller or a broker does not support", () => {
    mirrorOff.when(decide(update([{ feature: "mirror.version", maxVersionLevel: 2 }]))).thenFails({
      _tag: "InvalidUpdateVersion",
      message: "Invalid update version 2 for feature mirror.version. The local controller only supports versions 0-1"
    })
    mirrorOff
      .when(decide(update([{ feature: "group.version", maxVersionLevel: 1 }])))
      .thenFails({ _tag: "InvalidUpdateVersion" })
    mirrorOff
      .and([registerRecord(2, 3n, { features: [SUPPORTED_FEATURES[0]!] })])
      .when(decide(update([{ feature: "mirror.version", maxVersionLevel: 1 }])))
      .thenFails({
        _tag: "InvalidUpdateVersion",
        message: "Invalid update version 1 for feature mirror.version. Broker 2 does not support this feature."
      })
  })

  it("fails when a dependency breaks: mirror.version 1 needs metadata.version 30", () => {
    given([level("metadata.version", 21), level("mirror.version", 0)])
      .when(decide(update([{ feature: "mirror.version", maxVersionLevel: 1 }])))
      .thenFails({
        _tag: "InvalidUpdateVersion",
        message:
          "Invalid update version 1 for feature mirror.version. mirror.version 1 requires metadata.version 30 or higher."
      })
    given([level("metadata.version", 21), level("mirror.version", 0)])
      .when(
        decide(
          update([
            { feature: "metadata.version", maxVersionLevel: 30 },
            { feature: "mirror.version", maxVersionLevel: 1 }
          ])
        )
      )
      .then([level("metadata.version", 30), level("mirror.version", 1)], undefined)
  })

  it("refuses metadata.version downgrades, safe or unsafe", () => {
    given(bootstrap)
      .when(decide(update([{ feature: "metadata.version", maxVersionLevel: 29, upgradeType: 2 }])))
      .thenFails({
        _tag: "InvalidUpdateVersion",
        message:
          "Unsupported metadata.version downgrade from 30 to 29. Refusing to perform the requested downgrade because it might delete metadata information."
      })
    given(bootstrap)
      .when(decide(update([{ feature: "metadata.version", maxVersionLevel: 29, upgradeType: 3 }])))
      .thenFails({
        _tag: "InvalidUpdateVersion",
        message:
          "Unsupported metadata.version downgrade from 30 to 29. Unsafe metadata downgrade is not supported in this version."
      })
  })

  it("fails with INVALID_REQUEST for a feature named twice", () => {
    mirrorOff
      .when(
        decide(
          update([
            { feature: "mirror.version", maxVersionLevel: 1 },
            { feature: "mirror.version", maxVersionLevel: 1 }
          ])
        )
      )
      .thenFails({ _tag: "InvalidRequest" })
  })
})

describe("FeatureControl.replay", () => {
  it("dies on a level this controller cannot run", () => {
    expect(() => given([level("metadata.version", 31)])).toThrow(/replay died/)
    expect(() => given([level("unknown.feature", 1)])).toThrow(/replay died/)
    expect(given([level("unknown.feature", 0)]).state.features.finalized.size).toBe(0)
  })
})

describe("FeatureControl wire views", () => {
  const finalized = new Map([
    ["metadata.version", 30],
    ["mirror.version", 1],
    ["off.feature", 0]
  ])

  it("ApiVersions v4 lists every supported range and the finalized levels above 0 with their epoch", () => {
    expect(FeatureControl.apiVersionsFeatures(4, finalized, 42n)).toEqual({
      supportedFeatures: [
        { name: "metadata.version", minVersion: 7, maxVersion: 30 },
        { name: "mirror.version", minVersion: 0, maxVersion: 1 }
      ],
      finalizedFeaturesEpoch: 42n,
      finalizedFeatures: [
        { name: "metadata.version", maxVersionLevel: 30, minVersionLevel: 30 },
        { name: "mirror.version", maxVersionLevel: 1, minVersionLevel: 1 }
      ]
    })
  })

  it("ApiVersions v3 leaves out supported ranges starting at 0, which those clients cannot read", () => {
    const v3 = FeatureControl.apiVersionsFeatures(3, finalized, 42n)
    expect(v3.supportedFeatures.map((f) => f.name)).toEqual(["metadata.version"])
    expect(v3.finalizedFeatures.map((f) => f.name)).toEqual(["metadata.version", "mirror.version"])
  })

  it("follows the supported map it is given: a further feature needs no other change", () => {
    const supported = new Map([...FeatureControl.SUPPORTED, ["group.version", { min: 0, max: 1 }]])
    const out = FeatureControl.apiVersionsFeatures(4, new Map([["group.version", 1]]), 1n, supported)
    expect(out.supportedFeatures.map((f) => f.name)).toEqual(["metadata.version", "mirror.version", "group.version"])
    expect(out.finalizedFeatures).toEqual([{ name: "group.version", maxVersionLevel: 1, minVersionLevel: 1 }])
  })

  it("a v0 AllowDowngrade is forwarded as a safe downgrade", () => {
    const r = FeatureControl.withUpgradeTypes(
      update([
        { feature: "mirror.version", maxVersionLevel: 0, allowDowngrade: true },
        { feature: "metadata.version", maxVersionLevel: 30 }
      ])
    )
    expect(r.featureUpdates.map((u) => [u.upgradeType, u.allowDowngrade])).toEqual([
      [FeatureControl.UpgradeType.SAFE_DOWNGRADE, false],
      [FeatureControl.UpgradeType.UPGRADE, false]
    ])
    given([...bootstrap, registerRecord(1, 2n)])
      .when(decide(r))
      .then([level("mirror.version", 0), level("metadata.version", 30)], undefined)
  })
})
