import type { ToolDefinition } from '@tool-dispatch/shared';
import type { SessionInput, SessionState } from '../model.js';
import { type Catalog, definitionProblem, sessionSpecs } from './catalog.js';
import { initiallyFetched, loadedSet } from './session-view.js';

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
 * kept; the loaded set worked out again; schemas fetched before stay fetched.
 */
export function sessionStateOf(input: {
  session: string;
  body: SessionInput;
  tenant: string;
  workspace: string;
  previous: SessionState | null;
  catalog: Catalog;
  now: number;
}): SessionState {
  const { body, previous } = input;
  const clientTools = body.clientTools ?? [];
  const specs = sessionSpecs(input.catalog, clientTools);
  const fetched = new Set([...(previous?.fetched ?? []), ...initiallyFetched(body.provider, clientTools)]);
  return {
    id: input.session,
    provider: body.provider,
    tenant: input.tenant,
    autoApprove: body.autoApprove ?? previous?.autoApprove ?? [],
    clientTools,
    loaded: [...loadedSet(body.provider, specs, clientTools)],
    fetched: [...fetched],
    workspace: input.workspace,
    createdAt: previous?.createdAt ?? input.now,
    updatedAt: input.now,
  };
}
