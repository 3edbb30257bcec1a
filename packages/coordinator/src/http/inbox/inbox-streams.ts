import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Dispatcher } from '../../dispatcher.js';
import type { InboxChange, InboxItem } from '../../model.js';
import { realWorkspacePath } from '../../support/workspace-paths.js';
import type { Principal } from '../tokens.js';
import { byAge, editTarget, type FileNow, type InboxView, inboxView } from './inbox-display.js';

/** Largest workspace file read for an edit's diff. */
export const MAX_DIFF_FILE_BYTES = 512 * 1024;
/** Sessions whose tenant and workspace are remembered. */
const MAX_KNOWN_SESSIONS = 10_000;

/** An event for one page: the list when it connects, then each item asked and gone. */
export type InboxEvent =
  | { name: 'snapshot'; data: { items: InboxView[]; now: number; who: Principal } }
  | { name: 'asked'; data: InboxView }
  | { name: 'gone'; data: { id: string; session: string } };

/** One open page. */
export interface InboxClient {
  principal: Principal;
  send(event: InboxEvent): void;
}

/** What a workspace file holds now, kept inside the workspace and under MAX_DIFF_FILE_BYTES. */
export async function readWorkspaceFile(workspace: string, rel: string): Promise<FileNow> {
  const real = await realWorkspacePath(workspace, rel);
  if (real === undefined) return { kind: 'unreadable', reason: 'the path leaves the workspace' };
  const abs = path.join(workspace, real);
  try {
    const info = await stat(abs);
    if (!info.isFile()) return { kind: 'unreadable', reason: 'not a regular file' };
    if (info.size > MAX_DIFF_FILE_BYTES)
      return { kind: 'unreadable', reason: `larger than ${MAX_DIFF_FILE_BYTES} bytes` };
    return { kind: 'text', text: await readFile(abs, 'utf8') };
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return code === 'ENOENT' ? { kind: 'missing' } : { kind: 'unreadable', reason: code ?? String(e) };
  }
}

/** True when `principal` may see a session of `tenant`. */
export function sees(principal: Principal, tenant: string): boolean {
  return principal.tenant === '*' || principal.tenant === tenant;
}

/**
 * The inbox pages open on this coordinator: one watch of the dispatcher's inbox feed, each change
 * made into a view once (tenant, args display, the edited file read) and handed, in the order
 * heard, to the pages whose token sees its tenant.
 */
export class InboxStreams {
  private readonly clients = new Set<InboxClient>();
  private readonly known = new Map<string, { tenant: string; workspace: string } | null>();
  private unwatch: (() => void) | undefined;
  private watching: Promise<void> | undefined;
  private chain: Promise<void> = Promise.resolve();

  constructor(private readonly dispatcher: Dispatcher) {}

  /** Adds a page: its snapshot first, then the changes heard since it was taken. Returns the close function. */
  async open(client: InboxClient): Promise<() => void> {
    await this.watch();
    const held: InboxEvent[] = [];
    let ready = false;
    const page: InboxClient = {
      principal: client.principal,
      send: (event) => (ready ? client.send(event) : held.push(event)),
    };
    this.clients.add(page);
    try {
      client.send({
        name: 'snapshot',
        data: { items: await this.snapshot(client.principal), now: Date.now(), who: client.principal },
      });
    } catch (e) {
      this.clients.delete(page);
      throw e;
    }
    ready = true;
    for (const event of held.splice(0)) client.send(event);
    return () => this.clients.delete(page);
  }

  /** Everything waiting that `principal` may see, oldest first. */
  async snapshot(principal: Principal): Promise<InboxView[]> {
    const views: InboxView[] = [];
    for (const session of await this.dispatcher.inboxSessions()) {
      const info = await this.sessionInfo(session);
      if (!info || !sees(principal, info.tenant)) continue;
      for (const item of await this.dispatcher.inboxItems(session)) views.push(await this.viewOf(item, info));
    }
    return views.sort(byAge);
  }

  close(): void {
    this.unwatch?.();
    this.clients.clear();
  }

  private watch(): Promise<void> {
    this.watching ??= this.dispatcher
      .watchInbox((change) => {
        this.chain = this.chain.then(() => this.deliver(change)).catch(() => undefined);
      })
      .then((unwatch) => {
        this.unwatch = unwatch;
      });
    return this.watching;
  }

  private async deliver(change: InboxChange): Promise<void> {
    if (this.clients.size === 0) return;
    const info = await this.sessionInfo(change.session);
    if (!info) return;
    const event: InboxEvent =
      change.kind === 'asked'
        ? { name: 'asked', data: await this.viewOf(change.item, info) }
        : { name: 'gone', data: { id: change.id, session: change.session } };
    for (const client of this.clients) if (sees(client.principal, info.tenant)) client.send(event);
  }

  private async viewOf(item: InboxItem, info: { tenant: string; workspace: string }): Promise<InboxView> {
    const target = editTarget(item);
    const file = target === undefined ? undefined : await readWorkspaceFile(info.workspace, target);
    return inboxView(item, info.tenant, file);
  }

  /** A session's tenant and workspace (they do not change), remembered. */
  private async sessionInfo(session: string): Promise<{ tenant: string; workspace: string } | null> {
    const cached = this.known.get(session);
    if (cached) return cached;
    const state = await this.dispatcher.getSession(session);
    if (!state) return null;
    if (this.known.size >= MAX_KNOWN_SESSIONS) this.known.clear();
    const info = { tenant: state.tenant, workspace: state.workspace };
    this.known.set(session, info);
    return info;
  }
}
