// The one poll-until of the tests (code-review §4: eighteen were written per file, some failing
// with a bare "timed out"). The timeout is how long to wait before failing, not a bound the test
// asserts: generous by default, so a loaded machine waits longer instead of failing.

export interface UntilOptions {
  /** What is awaited, for the failure ("… waiting for <what>"); a function is read at the failure, to show the state then. */
  what: string | (() => string);
  /** Default 30 s. */
  timeoutMs?: number;
  /** Default 20 ms. */
  intervalMs?: number;
}

export const UNTIL_TIMEOUT_MS = 30_000;

/**
 * Calls `check` until it gives a truthy value and returns that value. A check that throws counts
 * as not yet; its last error is in the failure's message. Fails naming `what` after `timeoutMs`.
 */
export async function until<T>(
  check: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  options: UntilOptions,
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? UNTIL_TIMEOUT_MS;
  const end = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value;
    } catch (e) {
      lastError = e;
    }
    if (Date.now() > end) {
      const what = typeof options.what === 'function' ? options.what() : options.what;
      const why =
        lastError === undefined ? '' : ` (the check last threw: ${(lastError as Error).message ?? lastError})`;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${why}`);
    }
    await new Promise((r) => setTimeout(r, options.intervalMs ?? 20));
  }
}
