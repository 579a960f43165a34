#!/usr/bin/env node
// Prints the README's "Kafka APIs" table (markdown on stdout): starts Apache Kafka 4.4 and our `--embedded 3`
// server, runs kafka-broker-api-versions against both and compares. Needs the Kafka peer jars (the testkit
// resolves them). Usage: node scripts/api-versions-table.mjs
import { spawnSync } from "node:child_process"
import { dirname, join, resolve } from "node:path"

const root = resolve(dirname(new URL(import.meta.url).pathname), "..")
const testkit = join(root, "packages", "testkit")
const r = spawnSync(process.execPath, ["--import", "tsx", "scripts/api-versions-table.ts"], {
  cwd: testkit,
  stdio: ["ignore", "inherit", "inherit"]
})
process.exit(r.status ?? 1)
