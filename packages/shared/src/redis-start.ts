import { isRedisRefusal } from './redis-durability.js';

/** How long a process keeps trying to start while Redis refuses or does not answer. */
export const REDIS_START_WAIT_MS = 60_000;
/** First pause between two tries; each next one is twice as long, up to REDIS_START_MAX_PAUSE_MS. */
const FIRST_PAUSE_MS = 250;
const REDIS_START_MAX_PAUSE_MS = 4_000;

/**
 * Runs `start` again, after a growing pause, as long as it fails because Redis refuses or does not
 * answer (a Redis still coming up beside the process, a failover under way, a machine so loaded a
 * command passed its deadline), for at most `waitMs`; any other error, or one past the wait, is
 * thrown. `start` must leave nothing behind when it fails (no consumer, no open connection).
 * Each failed try is one line in `log`, naming what failed and when the next try is.
 */
export async function startWhenRedisAnswers<T>(
  start: () => Promise<T>,
  options: { what: string; log: (line: string) => void; waitMs?: number },
): Promise<T> {
  const deadline = Date.now() + (options.waitMs ?? REDIS_START_WAIT_MS);
  for (let pause = FIRST_PAUSE_MS; ; pause = Math.min(pause * 2, REDIS_START_MAX_PAUSE_MS)) {
    try {
      return await start();
    } catch (e) {
      if (!isRedisRefusal(e) || Date.now() + pause > deadline) throw e;
      options.log(
        `${options.what}: Redis did not answer at start (${(e as Error).message}); trying again in ${pause} ms`,
      );
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}
