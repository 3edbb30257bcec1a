import { effectiveBudget, type ResultBudget, type ToolDefinition } from '@tool-dispatch/shared';
import type { SessionInput, SessionState } from '../model.js';
import { type Catalog, definitionProblem, sessionSpecs } from './catalog.js';
import { initiallyFetched, loadedSet, loadingOf } from './session-view.js';

/** Why a session's client tools cannot be taken (a definition is bad, repeated, or names a catalog tool), or undefined. */
export function clientToolsProblem(clientTools: readonly ToolDefinition[], catalog: Catalog): string | undefined {
  const names = new Set<string>();
  for (const def of clientTools) {
    const problem = definitionProblem(def);
    if (problem) return `clientTools: ${problem}`;
    if (names.has(def.name)) return `clientTools: ${def.name} is defined twice`;
    if (catalog.get(def.name)) return `clientTools: ${def.name} is already a tool of the catalog`;
    names.add(def.name);
  }
  return undefined;
}

/**
 * The session after a PUT: provider, tenant and client tools as given; auto-approve as given or
 * kept; the loaded set worked out again; schemas fetched before stay fetched; the result budget
 * as given, else kept, else the deployment's or the provider's default (`budgetDefaults`).
 */
export function sessionStateOf(input: {
  session: string;
  body: SessionInput;
  tenant: string;
  workspace: string;
  previous: SessionState | null;
  catalog: Catalog;
  now: number;
  budgetDefaults?: ResultBudget;
}): SessionState {
  const { body, previous } = input;
  const clientTools = body.clientTools ?? [];
  const specs = sessionSpecs(input.catalog, clientTools);
  const loading = loadingOf(body);
  const fetched = new Set([...(previous?.fetched ?? []), ...initiallyFetched(loading, clientTools)]);
  const budget = effectiveBudget(body.resultBudget ?? previous?.ownBudget, input.budgetDefaults ?? {}, body.provider);
  return {
    id: input.session,
    provider: body.provider,
    tenant: input.tenant,
    autoApprove: body.autoApprove ?? previous?.autoApprove ?? [],
    clientTools,
    loaded: [...loadedSet(loading, specs, clientTools)],
    fetched: [...fetched],
    workspace: input.workspace,
    createdAt: previous?.createdAt ?? input.now,
    updatedAt: input.now,
    ...(budget ? { resultBudget: budget } : {}),
    ...(body.toolSearch ? { toolSearch: body.toolSearch } : {}),
    ...(body.resultBudget
      ? { ownBudget: body.resultBudget }
      : previous?.ownBudget
        ? { ownBudget: previous.ownBudget }
        : {}),
  };
}
