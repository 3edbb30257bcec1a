import type { Executor } from '@tool-dispatch/shared';
import type { CatalogView } from '../model.js';
import type { Catalog } from '../rules/catalog.js';
import { canRun } from '../rules/session-view.js';
import { within } from '../support/settle.js';
import { runnableAnywhere } from './preflight.js';

/** How long a request waits for the workers' announced tools before going on with the catalog it has. */
export const SYNC_CATALOG_PATIENCE_MS = 5_000;

/**
 * Takes the MCP tools the executor's workers announce now into the catalog (nothing to do while
 * they are the same). Waited for at most SYNC_CATALOG_PATIENCE_MS: with Redis away the read may
 * hang, and a round then goes on with the catalog as last adopted.
 */
export async function syncCatalog(
  executor: Pick<Executor, 'announcedTools'>,
  catalog: Catalog,
  log: (line: string) => void,
): Promise<void> {
  const reading = executor.announcedTools?.();
  if (!reading) return;
  // At hand (in-process, or read recently): no timer and no wait for this round.
  const announced =
    reading instanceof Promise ? await within(reading, SYNC_CATALOG_PATIENCE_MS, () => undefined) : reading;
  if (announced) catalog.adopt(announced, log);
}

/** The catalog less the tools nothing can run (DESIGN.md pass 1 step 5: as if they had no definition). */
export async function catalogView(executor: Pick<Executor, 'handlerNames'>, catalog: Catalog): Promise<CatalogView[]> {
  const runnable = await runnableAnywhere(executor);
  return catalog
    .all()
    .filter((s) => canRun(s, runnable))
    .map((s) => ({
      name: s.name,
      description: s.description,
      concurrency: s.concurrency,
      confirm: s.confirm,
      deferred: s.deferred,
      cacheable: s.cacheable,
      parameters: s.parameters,
      source: s.kind,
      ...(s.server !== undefined ? { server: s.server } : {}),
      ...(s.annotations !== undefined ? { annotations: s.annotations } : {}),
    }));
}
