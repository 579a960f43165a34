#!/usr/bin/env node
// Fails when `setTimeout`, `setInterval` or `Date.now` appears in the src of the control-plane packages
// (authorizer, coordinator, coordinator-runtime, group-coordinator, transaction-coordinator, mirror, controller, raft, raft-runtime): their time comes from
// Effect's `Clock` (`Clock.currentTimeMillis`, `Effect.sleep`, `Schedule`), so their tests run on
// `TestClock`. The one allowed place is a package's bridge for non-Effect callers, `src/internal/Clock.ts`.
// Comments are ignored. Prints every offending line. `--warn`: print them but exit 0.
import { sep } from "node:path"
import { report, scan } from "./srcScan.mjs"

const PACKAGES = [
  "authorizer",
  "coordinator",
  "coordinator-runtime",
  "group-coordinator",
  "transaction-coordinator",
  "mirror",
  "controller",
  "raft",
  "raft-runtime"
]
const ALLOWED = `${sep}internal${sep}Clock.ts`

report(
  scan(PACKAGES, /\b(setTimeout|setInterval)\s*\(|\bDate\.now\b/, { skipFile: (f) => f.endsWith(ALLOWED) }),
  "control-plane-clock: no setTimeout/setInterval/Date.now in control-plane src",
  (n) =>
    `control-plane-clock: ${n} setTimeout/setInterval/Date.now in control-plane src (use Effect's Clock, or src/internal/Clock.ts):`
)
