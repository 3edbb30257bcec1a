import {
  type Artifact,
  artifactText,
  budgetedLength,
  type CallResult,
  isTruncatedOutput,
  MIN_RESULT_BUDGET,
  type ResultBudget,
  truncatedOutput,
} from '@tool-dispatch/shared';

/**
 * API.md v1.2: when a round's ok outputs together pass the round budget, the largest are cut
 * first (each replaced by a preview of its artifact, the worker having written the whole of it)
 * until the rest fit. `results` are the executed calls' by call index, `artifacts` what the
 * workers wrote for them; answers the results to replace, by call index. Outputs with no
 * artifact (short ones, and those answered without a worker) are never cut.
 */
export function roundCuts(
  results: ReadonlyMap<number, CallResult>,
  artifacts: ReadonlyMap<number, Artifact>,
  budget: ResultBudget,
): Map<number, CallResult> {
  const cuts = new Map<number, CallResult>();
  if (budget.round === undefined) return cuts;
  const sized = [...results]
    .filter(([, r]) => r.status === 'ok')
    .map(([index, r]) => ({ index, r, length: budgetedLength(r.name, r.output) }));
  let total = sized.reduce((n, x) => n + x.length, 0);
  if (total <= budget.round) return cuts;
  // Each cut output gets an even share of the round (never more than the call budget).
  const share = Math.max(MIN_RESULT_BUDGET, Math.floor(budget.round / Math.max(1, sized.length)));
  const each = Math.min(budget.call ?? share, share);
  const candidates = sized
    .filter((x) => artifacts.has(x.index) && !isTruncatedOutput(x.r.output) && x.length > each)
    .sort((a, b) => b.length - a.length || a.index - b.index);
  for (const x of candidates) {
    if (total <= budget.round) break;
    const artifact = artifacts.get(x.index) as Artifact;
    const text = artifactText(x.r.name, x.r.output);
    const output = truncatedOutput({ text, length: x.length, artifact, budget: each, why: 'round' });
    cuts.set(x.index, { ...x.r, output });
    total += JSON.stringify(output).length - x.length;
  }
  return cuts;
}
