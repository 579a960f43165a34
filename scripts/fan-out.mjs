#!/usr/bin/env node
// Fails when `Promise.all(` or `Promise.allSettled(` appears in the src of the control-plane packages
// (client, coordinator, coordinator-runtime, group-coordinator, transaction-coordinator, mirror, controller): a fan-out over
// brokers or nodes goes through `FanOut.forEachBroker` of @clustermirror/client (bounded concurrency,
// per-broker timeout, one merge). Comments are ignored. A line right below a comment starting
// `not a fan-out:` (with the reason: e.g. closing local shards) is allowed. Prints every offending line.
// `--warn`: print them but exit 0.
import { report, scan } from "./srcScan.mjs"

const PACKAGES = [
  "client",
  "coordinator",
  "coordinator-runtime",
  "group-coordinator",
  "transaction-coordinator",
  "mirror",
  "controller"
]

report(
  scan(PACKAGES, /\bPromise\.(all|allSettled)\s*\(/, {
    exempt: (lines, i) => i > 0 && /^\s*\/\/ not a fan-out: \S/.test(lines[i - 1] ?? "")
  }),
  "fan-out: no Promise.all/allSettled in control-plane src",
  (n) => `fan-out: ${n} Promise.all/allSettled in control-plane src (use FanOut.forEachBroker):`
)
