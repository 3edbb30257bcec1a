/**
 * The reason a call is stopped with when its worker lost its hold on it (queue/fencing.ts): the
 * place may be given to someone else soon, so what stops now stops at once (no kill grace).
 */
export class FencedAbort extends Error {
  override readonly name = 'FencedAbort';
  constructor(
    message: string,
    /** How long the hold had gone without a renewal when the call was stopped. */
    readonly unrenewedMs: number,
  ) {
    super(message);
  }
}

/** Whether an abort reason is a fence's (FencedAbort). */
export function isFenced(reason: unknown): reason is FencedAbort {
  return reason instanceof FencedAbort;
}
