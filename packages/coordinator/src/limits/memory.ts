import type { LimitNow } from '../rules/named-limits.js';
import { Semaphore } from '../support/semaphore.js';
import { HoldTimes } from './hold-times.js';
import type { LimitRelease, LimitStage, Limits, LimitWait } from './limits.js';
import { scopeKey } from './limits.js';
import { RateWindow } from './rate-window.js';

/**
 * One process's limits (embedded mode): a semaphore per named limit, made on first use and
 * dropped once idle. A place that is free is granted at once, with no promise (`tryAcquire`).
 */
export class MemoryLimits implements Limits {
  readonly shared = false;
  private readonly limits = new Map<string, Semaphore>();
  /** The rate windows of limits with a rate; kept while they hold a grant, even with the limit idle. */
  private readonly windows = new Map<string, RateWindow>();
  private readonly holds = new HoldTimes();

  tryAcquire(stages: readonly LimitStage[]): LimitRelease | undefined {
    for (const stage of stages) {
      if (this.limits.get(keyOf(stage))?.isFree === false) return undefined;
      if (stage.rate && this.windowOf(stage).isFree === false) return undefined;
    }
    const held = stages.map((stage) => {
      const key = keyOf(stage);
      const semaphore = this.semaphoreOf(key, stage);
      if (stage.rate) this.windowOf(stage).tryTake();
      return { key, stage, since: Date.now(), release: semaphore.take() as () => void };
    });
    return this.releaser(held);
  }

  async acquire(
    stages: readonly LimitStage[],
    signal?: AbortSignal,
    onWait?: (wait: LimitWait) => void,
  ): Promise<LimitRelease> {
    const held: Held[] = [];
    const release = this.releaser(held);
    try {
      for (const stage of stages) {
        const key = keyOf(stage);
        const semaphore = this.semaphoreOf(key, stage);
        const window = stage.rate ? this.windowOf(stage) : undefined;
        const release = await waitFor(semaphore, window, stage, signal, onWait);
        held.push({ key, stage, since: Date.now(), release });
      }
      return release;
    } catch (e) {
      // Places of a call that never got them all were not held by a call that ran: no hold time.
      for (const h of held) h.since = undefined;
      release();
      for (const stage of stages) this.dropIfIdle(keyOf(stage));
      throw e;
    }
  }

  async peek(stages: readonly LimitStage[]): Promise<LimitNow[]> {
    return stages.map((stage) => ({
      held: this.limits.get(keyOf(stage))?.held ?? 0,
      nextTokenMs: stage.rate ? this.windowOf(stage).nextTokenMs() : 0,
      meanHoldMs: this.holds.meanMs(stage.name),
    }));
  }

  async close(): Promise<void> {}

  private semaphoreOf(key: string, stage: LimitStage): Semaphore {
    let semaphore = this.limits.get(key);
    if (!semaphore) {
      semaphore = new Semaphore(stage.concurrency);
      this.limits.set(key, semaphore);
    }
    return semaphore;
  }

  private windowOf(stage: LimitStage & { rate?: { count: number; windowMs: number } }): RateWindow {
    const key = keyOf(stage);
    let window = this.windows.get(key);
    if (!window) {
      const { count, windowMs } = stage.rate ?? { count: Number.MAX_SAFE_INTEGER, windowMs: 1 };
      window = new RateWindow(count, windowMs);
      this.windows.set(key, window);
    }
    // Idle windows are dropped as others are made (a window outlives its limit's last holder).
    if (this.windows.size > 64) for (const [k, w] of this.windows) if (w.isIdle && k !== key) this.windows.delete(k);
    return window;
  }

  private releaser(held: Held[]): LimitRelease {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const now = Date.now();
      for (const h of held.splice(0).reverse()) {
        // Only named limits: a run's places are one run's, and many.
        if (h.stage.reason === 'named_limit' && h.since !== undefined) this.holds.record(h.stage.name, now - h.since);
        h.release();
        this.dropIfIdle(h.key);
      }
    };
  }

  private dropIfIdle(key: string): void {
    if (this.limits.get(key)?.load === 0) this.limits.delete(key);
  }

  /** Named limits in use (tests: idle ones are dropped). */
  get size(): number {
    return this.limits.size;
  }
}

interface Held {
  key: string;
  stage: LimitStage;
  /** When the place was granted (its hold time, at release); undefined for a call that did not get them all. */
  since: number | undefined;
  release: () => void;
}

const keyOf = (stage: LimitStage) => `${scopeKey(stage.scope)}\u0000${stage.name}`;

/** A place of `semaphore` (and a grant of its rate `window`), telling `onWait` when it was not free at once. */
async function waitFor(
  semaphore: Semaphore,
  window: RateWindow | undefined,
  stage: LimitStage,
  signal: AbortSignal | undefined,
  onWait: ((wait: LimitWait) => void) | undefined,
): Promise<() => void> {
  const waits = !semaphore.isFree || window?.isFree === false;
  const startMs = Date.now();
  const release = await semaphore.acquire(signal);
  try {
    await window?.take(signal);
  } catch (e) {
    release();
    throw e;
  }
  if (waits) onWait?.({ reason: stage.reason, limit: stage.name, startMs, endMs: Date.now() });
  return release;
}
