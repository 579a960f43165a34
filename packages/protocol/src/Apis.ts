/**
 * The registry of every API this package defines, by key. Used by servers to dispatch and to build
 * the ApiVersions table, and by tests to cover every version.
 */
import type { ApiDef } from "./Api.js"
import * as ApiVersions from "./apis/ApiVersions.js"

// biome-ignore lint/suspicious/noExplicitAny: a registry of heterogeneous APIs
export type AnyApi = ApiDef<any, any>

export const all: ReadonlyArray<AnyApi> = [
  ApiVersions.api
]

export const byKey: ReadonlyMap<number, AnyApi> = new Map(all.map((a) => [a.key, a]))
