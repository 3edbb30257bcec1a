import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { isValidId, type ResultBudget } from '@tool-dispatch/shared';
import type { SessionInput, SessionState } from '../model.js';
import { RequestError } from '../request-error.js';
import type { Catalog } from '../rules/catalog.js';
import { clientToolsProblem, sessionStateOf } from '../rules/session-state.js';
import type { Store } from '../store/store.js';

/** What a session's PUT reads and writes. */
export interface PutSessionDeps {
  store: Store;
  catalog: Catalog;
  workspaceRoot: string;
  budgetDefaults: ResultBudget;
}

/** Creates or updates a session (its workspace under the tenant's folder), after the checks of its body. */
export async function putSession(d: PutSessionDeps, session: string, input: SessionInput): Promise<SessionState> {
  const tenant = input.tenant ?? 'default';
  if (!isValidId(tenant))
    throw new RequestError('invalid_request', `tenant ${JSON.stringify(tenant)} is not a valid id`);
  const problem = clientToolsProblem(input.clientTools ?? [], d.catalog);
  if (problem) throw new RequestError('invalid_request', problem);
  const workspace = path.resolve(d.workspaceRoot, tenant, session);
  await mkdir(workspace, { recursive: true });
  const previous = await d.store.getSession(session);
  const state = sessionStateOf({
    session,
    body: input,
    tenant,
    workspace,
    previous,
    catalog: d.catalog,
    now: Date.now(),
    budgetDefaults: d.budgetDefaults,
  });
  await d.store.putSession(state);
  return state;
}
