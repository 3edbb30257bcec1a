// Issue #43 (a): a worker partitioned from Redis both ways mid-command, then healed (the test is
// test/support/partition-worker-cut.ts, shared with the outbound-only cut).
import { describeWorkerCut } from '../support/partition-worker-cut.js';

describeWorkerCut('both', 'a worker partitioned from Redis mid-command, then healed', 'worker cut');
