/** One step of pass 2: a batch of consecutive concurrent calls, or one serial call alone. */
export type PlanStep<T> = { kind: 'batch'; calls: T[] } | { kind: 'serial'; call: T };

/**
 * DESIGN.md pass 2: order is kept. Consecutive concurrent calls form a batch; a serial call runs
 * alone, after everything before it and before anything after it.
 */
export function planSteps<T>(calls: readonly T[], isConcurrent: (call: T) => boolean): PlanStep<T>[] {
  const steps: PlanStep<T>[] = [];
  for (const call of calls) {
    const last = steps[steps.length - 1];
    if (!isConcurrent(call)) steps.push({ kind: 'serial', call });
    else if (last?.kind === 'batch') last.calls.push(call);
    else steps.push({ kind: 'batch', calls: [call] });
  }
  return steps;
}
