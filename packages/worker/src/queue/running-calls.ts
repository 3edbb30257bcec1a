/**
 * Calls running here, by call id (callIdFor), so a cancel message reaches the one it names. A call
 * id may be held by two jobs at once on one worker (a takeover's job beside the original, one of
 * them finding the other running it): the cancel reaches both, and one ending leaves the other.
 */
export class RunningCalls {
  private readonly byCall = new Map<string, Set<AbortController>>();

  add(callId: string, stop: AbortController): void {
    const held = this.byCall.get(callId);
    if (held) held.add(stop);
    else this.byCall.set(callId, new Set([stop]));
  }

  remove(callId: string, stop: AbortController): void {
    const held = this.byCall.get(callId);
    if (!held?.delete(stop) || held.size > 0) return;
    this.byCall.delete(callId);
  }

  abort(callId: string, reason: Error): void {
    for (const stop of this.byCall.get(callId) ?? []) stop.abort(reason);
  }
}
