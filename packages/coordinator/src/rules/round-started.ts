import type { NormalCall, RoundRef } from '../model.js';

/** The `round.started` data: the round, its run, and each call's id and tool name (run_tool unwrapped). */
export function roundStartedData(ref: RoundRef, calls: readonly NormalCall[]): Record<string, unknown> {
  return {
    round: ref.round,
    run: ref.run,
    calls: calls.map((c) => ({
      id: c.id,
      name: c.name === 'run_tool' && typeof c.args?.name === 'string' ? c.args.name : c.name,
    })),
  };
}
