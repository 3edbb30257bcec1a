import { describe, expect, it } from 'vitest';
import { parseStraceSummary } from '../bench/syscalls.js';

// The syscalls bench reads `strace -c`'s table (bench/syscalls.ts): a call count misread there would
// misstate the chain it reports.

const SAMPLE = `% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 92.67    2.943187        5982       492        47 futex
  2.89    0.091899          26      3438           write
  2.85    0.090363          14      6159           epoll_pwait
  0.00    0.000007           1         6           uname
------ ----------- ----------- --------- --------- ----------------
100.00    3.176102         237     13375        47 total
`;

describe('parseStraceSummary', () => {
  it('reads the calls column of each system call, with or without an errors column, and leaves out the total', () => {
    const counts = parseStraceSummary(SAMPLE);
    expect(Object.fromEntries(counts)).toEqual({ futex: 492, write: 3438, epoll_pwait: 6159, uname: 6 });
  });

  it('gives nothing for text that is not such a table', () => {
    expect(parseStraceSummary('strace: attach: ptrace(PTRACE_SEIZE, 1): Operation not permitted\n').size).toBe(0);
  });
});
