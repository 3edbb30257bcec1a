import type { AnswerOutcome, ConfirmAnswer, ConfirmDecision, ConfirmHub, PendingConfirmation } from './confirm-hub.js';

interface Waiting {
  item: PendingConfirmation;
  decide: (d: ConfirmDecision) => void;
}

/** Embedded-mode confirmations: waiting promises in this process. */
export class MemoryConfirmHub implements ConfirmHub {
  private readonly waiting = new Map<string, Waiting>();

  async request(
    items: readonly PendingConfirmation[],
    options: { timeoutMs: number; signal: AbortSignal },
  ): Promise<ConfirmDecision[]> {
    return Promise.all(items.map((item) => this.waitFor(item, options)));
  }

  private waitFor(
    item: PendingConfirmation,
    options: { timeoutMs: number; signal: AbortSignal },
  ): Promise<ConfirmDecision> {
    return new Promise<ConfirmDecision>((resolve) => {
      const finish = (d: ConfirmDecision) => {
        if (!this.waiting.has(item.confirmationId)) return;
        this.waiting.delete(item.confirmationId);
        clearTimeout(timer);
        options.signal.removeEventListener('abort', onAbort);
        resolve(d);
      };
      const onAbort = () => finish({ approve: false, remember: false, by: 'cancelled' });
      const timer = setTimeout(
        function confirmTimedOut() {
          finish({ approve: false, remember: false, by: 'timeout' });
        },
        Math.max(0, options.timeoutMs),
      );
      this.waiting.set(item.confirmationId, { item, decide: finish });
      if (options.signal.aborted) onAbort();
      else options.signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  async answer(session: string, idOrCallId: string, decision: ConfirmAnswer): Promise<AnswerOutcome> {
    let target = this.waiting.get(idOrCallId);
    if (!target || target.item.session !== session) {
      const byCall = [...this.waiting.values()].filter(
        (w) => w.item.session === session && w.item.callId === idOrCallId,
      );
      if (byCall.length > 1) return { kind: 'ambiguous', count: byCall.length };
      target = byCall[0];
    }
    if (!target) return { kind: 'not_found' };
    target.decide({
      approve: decision.approve,
      remember: decision.remember,
      by: 'person',
      who: decision.who ?? 'person',
      at: Date.now(),
    });
    return { kind: 'answered', confirmation: target.item };
  }

  async pending(session: string): Promise<PendingConfirmation[]> {
    return [...this.waiting.values()]
      .map((w) => w.item)
      .filter((i) => i.session === session)
      .sort((a, b) => a.createdAt - b.createdAt);
  }

  async close(): Promise<void> {
    for (const w of [...this.waiting.values()]) w.decide({ approve: false, remember: false, by: 'cancelled' });
  }
}
