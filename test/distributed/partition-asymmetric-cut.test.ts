// Issue #43 (c): an asymmetric cut: a worker's outbound packets dropped (it hears Redis, Redis never
// hears it) mid-command, then healed (the test is test/support/partition-worker-cut.ts, shared
// with the cut both ways).
import { describeWorkerCut } from '../support/partition-worker-cut.js';

describeWorkerCut(
  'outbound',
  'a worker whose outbound packets are dropped mid-command (an asymmetric cut), then healed',
  'worker outbound-only cut',
);
