import { randomBytes } from 'node:crypto';
import type { ExecJob } from '../../packages/shared/src/index.js';

let seq = 0;

/**
 * An ExecJob for executor tests: one call (index 0) of a round of its own in session `s1`, run
 * `r1`, on the concurrent queue with a 10 s deadline unless `over` says otherwise.
 */
export function execJob(
  name: string,
  args: Record<string, unknown>,
  over: Partial<ExecJob> & { workspace: string },
): ExecJob {
  seq++;
  return {
    session: 's1',
    tenant: 't1',
    run: 'r1',
    round: `rnd_${seq}${randomBytes(3).toString('hex')}`,
    toolCallId: `call_${seq}`,
    callIndex: 0,
    name,
    args,
    queue: 'concurrent',
    timeoutMs: 10_000,
    ...over,
  };
}
