import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import {
  type Artifact,
  artifactPath,
  artifactText,
  budgetedLength,
  type ExecJob,
  STANDBY_ARTIFACT_MIN_CHARS,
  truncatedOutput,
} from '@tool-dispatch/shared';

/** A budgeted output: what the model gets, and the artifact written for a round budget (output not replaced). */
export interface Budgeted {
  output: unknown;
  artifact?: Artifact;
}

/**
 * The session's result budget applied where the output is produced (API.md v1.2): an output over
 * the call budget is written whole to `.tool-results/` in the workspace and replaced by a
 * preview; under a round budget, a long output's artifact is written in case the coordinator cuts
 * it with the round's others. Without a budget the output is as it was.
 */
export async function applyResultBudget(job: ExecJob, output: unknown): Promise<Budgeted> {
  const budget = job.resultBudget;
  if (!budget) return { output };
  const length = budgetedLength(job.name, output);
  const overCall = budget.call !== undefined && length > budget.call;
  const standby = budget.round !== undefined && length > (budget.standbyOver ?? STANDBY_ARTIFACT_MIN_CHARS);
  if (!overCall && !standby) return { output };
  const text = artifactText(job.name, output);
  const artifact = await writeArtifact(job, text);
  if (!overCall) return { output, artifact };
  return { output: truncatedOutput({ text, length, artifact, budget: budget.call as number, why: 'call' }) };
}

async function writeArtifact(job: ExecJob, text: string): Promise<Artifact> {
  const rel = artifactPath(job);
  const abs = path.join(job.workspace, rel);
  await mkdir(path.dirname(abs), { recursive: true });
  const data = Buffer.from(text, 'utf8');
  await writeFile(abs, data);
  return { path: rel, bytes: data.length };
}
