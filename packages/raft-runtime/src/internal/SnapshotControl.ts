/**
 * Kafka's snapshot control records: a snapshot file opens with a SnapshotHeader (control type 3) and
 * closes with a SnapshotFooter (control type 4), each alone in a control batch.
 *
 * SnapshotHeaderRecord v0, flexible => Version:int16 LastContainedLogTimestamp:int64 tagged fields
 * SnapshotFooterRecord v0, flexible => Version:int16 tagged fields
 */
import { ControlRecord, Spec as S } from "@clustermirror/protocol"
import { Either } from "effect"
import type { Buffer } from "node:buffer"

export const SNAPSHOT_HEADER = 3
export const SNAPSHOT_FOOTER = 4

const Header = S.message({
  name: "SnapshotHeaderRecord",
  type: "data",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [S.int16("Version"), S.int64("LastContainedLogTimestamp")]
})

const Footer = S.message({
  name: "SnapshotFooterRecord",
  type: "data",
  validVersions: "0",
  flexibleVersions: "0+",
  fields: [S.int16("Version")]
})

export const key = (type: number): Buffer => ControlRecord.encodeKey(type)

export const encodeHeader = (lastContainedLogTimestamp: number): Buffer =>
  Either.getOrThrowWith(
    Header.encode(0, { version: 0, lastContainedLogTimestamp: BigInt(lastContainedLogTimestamp) }),
    (e) => e
  )

export const encodeFooter = (): Buffer => Either.getOrThrowWith(Footer.encode(0, { version: 0 }), (e) => e)

/** The header's LastContainedLogTimestamp, or why the bytes are not a header. */
export const decodeHeader = (bytes: Uint8Array): Either.Either<number, string> =>
  Either.mapBoth(Header.decode(0, bytes), {
    onLeft: (e) => e.message,
    onRight: (h) => Number(h.lastContainedLogTimestamp)
  })

export const decodeFooter = (bytes: Uint8Array): Either.Either<void, string> =>
  Either.mapBoth(Footer.decode(0, bytes), { onLeft: (e) => e.message, onRight: () => undefined })
