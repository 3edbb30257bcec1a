import type { CallResult } from '@tool-dispatch/shared';
import type { PlannedCall } from '../model.js';

/**
 * DESIGN.md step 3, within a round: a repeat of an earlier identical call is `deduped` when the
 * first ended ok (or deduped: that names the original ok call), naming the original; otherwise it
 * gets the first's status (`cached` included: a cached answer is not an ok result of this run),
 * output and error.
 */
export function followerResult(p: PlannedCall, leader: CallResult, round: string): CallResult {
  if (leader.status === 'ok' || leader.status === 'deduped') {
    return {
      id: p.call.id,
      name: p.name,
      status: 'deduped',
      output: leader.output,
      dedupedFrom: leader.status === 'deduped' && leader.dedupedFrom ? leader.dedupedFrom : leader.id,
      dedupedFromRound: leader.status === 'deduped' && leader.dedupedFromRound ? leader.dedupedFromRound : round,
      durationMs: 0,
    };
  }
  const copy: CallResult = { id: p.call.id, name: p.name, status: leader.status, durationMs: 0 };
  if (leader.error) copy.error = leader.error;
  if (leader.output !== undefined) copy.output = leader.output;
  return copy;
}
