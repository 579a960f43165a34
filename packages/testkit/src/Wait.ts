/**
 * Polling for a condition in integration tests (a leader elected, a replica back in the ISR), with a
 * deadline and the last error in the failure message.
 *
 * Only for tests against real processes; unit tests use `TestClock` instead of real time.
 */

/** Polls `check` until it returns a value other than `undefined`, or fails with `what` after `timeoutMs`. */
export const eventually = async <A>(
  what: string,
  check: () => Promise<A | undefined> | A | undefined,
  timeoutMs = 60_000,
  intervalMs = 100
): Promise<A> => {
  const deadline = Date.now() + timeoutMs
  let lastError: unknown
  for (;;) {
    try {
      const a = await check()
      if (a !== undefined) return a
    } catch (e) {
      lastError = e
    }
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${lastError === undefined ? "" : `: ${String(lastError)}`}`
      )
    await new Promise((r) => setTimeout(r, intervalMs))
  }
}
