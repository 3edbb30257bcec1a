import { getEventListeners } from 'node:events';

/**
 * Abort listeners by signal, behind one listener on each signal: a run's signal is listened to
 * by every call of the run, and EventTarget's add/removeEventListener were 3% of an embedded
 * round's time against a Set's add/delete. The signal's own listener goes with the signal.
 */
const sharedListeners = new WeakMap<AbortSignal, Set<() => void>>();

/** Calls `listener` once when `signal` aborts (never if it already has); returns what takes it off again. */
export function onAbort(signal: AbortSignal, listener: () => void): () => void {
  let listeners = sharedListeners.get(signal);
  if (!listeners) {
    const all = new Set<() => void>();
    listeners = all;
    sharedListeners.set(signal, all);
    signal.addEventListener(
      'abort',
      () => {
        sharedListeners.delete(signal);
        for (const f of all) f();
        all.clear();
      },
      { once: true },
    );
  }
  const mine = listeners;
  mine.add(listener);
  return () => mine.delete(listener);
}

/**
 * `promise`'s outcome, or what `aborted` returns (or throws, as a rejection) once `signal` aborts,
 * whichever comes first; `aborted` at once when the signal already has. Its listener is taken off
 * when the promise settles.
 */
export function raceAbort<T, U>(promise: Promise<T>, signal: AbortSignal, aborted: () => U): Promise<T | U> {
  return new Promise<T | U>((resolve, reject) => {
    const stop = () => {
      try {
        resolve(aborted());
      } catch (e) {
        reject(e);
      }
    };
    let off: (() => void) | undefined;
    if (signal.aborted) stop();
    else off = onAbort(signal, stop);
    promise.then(resolve, reject).finally(() => off?.());
  });
}

/** How many abort listeners a signal still has: its EventTarget listeners and `onAbort`'s, not counting the one `onAbort` shares. */
export function abortListenersLeft(signal: AbortSignal): number {
  const shared = sharedListeners.get(signal);
  const own = getEventListeners(signal, 'abort').length;
  return shared ? own - 1 + shared.size : own;
}
