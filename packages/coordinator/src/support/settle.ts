/**
 * `p`'s outcome, or, if it has not settled within `ms`, `late()`'s (a value, or what it throws).
 * `p` is not cancelled: its later outcome is dropped. The timer keeps the process alive only with
 * `keepAlive` (a shutdown step waits its time out even when nothing else is left to run).
 */
export async function within<T, U>(
  p: Promise<T>,
  ms: number,
  late: () => U,
  options: { keepAlive?: boolean } = {},
): Promise<T | U> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<U>((resolve, reject) => {
    timer = setTimeout(() => {
      try {
        resolve(late());
      } catch (e) {
        reject(e);
      }
    }, ms);
    if (!options.keepAlive) timer.unref();
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Waits for `p` (ignoring how it ends), at most `ms`: for shutdown steps that must not hang. */
export async function settleWithin(p: Promise<unknown>, ms: number): Promise<void> {
  await within(
    p.catch(() => undefined),
    ms,
    () => undefined,
    { keepAlive: true },
  );
}
