import { defineConfig, mergeConfig } from "vitest/config"
import { integration } from "../../vitest.shared.js"

/**
 * The server's integration files run two at a time: each starts its own processes on free ports and
 * most of a file's time is spent waiting on real peers (JVM start-ups, sessions, elections), so two
 * share a 2-core machine without starving each other.
 */
export default mergeConfig(integration, defineConfig({ test: { fileParallelism: true, maxWorkers: 2, minWorkers: 1 } }))
