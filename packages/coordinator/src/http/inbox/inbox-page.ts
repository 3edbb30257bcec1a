import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { INBOX_PATH } from './inbox-auth.js';

/** The page's files, served from this origin only (no CDN, no inline script: the dashboard's CSP holds). */
export const INBOX_ASSETS: Readonly<Record<string, string>> = {
  'inbox.js': 'text/javascript; charset=utf-8',
  'inbox.css': 'text/css; charset=utf-8',
};

/**
 * `packages/coordinator/assets/inbox/`, found from this module whether it runs from `src/` or
 * bundled into `dist/`.
 */
export function inboxAssetsDir(from = path.dirname(fileURLToPath(import.meta.url))): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'assets', 'inbox');
    if (existsSync(path.join(candidate, 'inbox.js'))) return candidate;
    if (path.dirname(dir) === dir) throw new Error(`the inbox's assets are missing above ${from}`);
  }
}

/** The page's files, read once. */
export function loadInboxAssets(): Map<string, { type: string; body: string }> {
  const dir = inboxAssetsDir();
  return new Map(
    Object.entries(INBOX_ASSETS).map(([name, type]) => [
      name,
      { type, body: readFileSync(path.join(dir, name), 'utf8') },
    ]),
  );
}

/** The page's shell; the script fills it from the event stream. */
export function inboxPage(options: { loginEnabled: boolean }): string {
  const logout = options.loginEnabled ? `<a id="logout" href="${INBOX_PATH}/logout">Log out</a>` : '';
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="robots" content="noindex">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>tool-dispatch inbox</title>
<link rel="stylesheet" href="${INBOX_PATH}/assets/inbox.css">
<script src="${INBOX_PATH}/assets/inbox.js" defer></script></head>
<body><header><h1>Inbox</h1><span id="who"></span><span id="connection" class="off">connecting…</span>
<button id="notify" type="button">Notify me of new items</button>${logout}</header>
<main><section id="list-pane" aria-label="Waiting"><ol id="list"></ol><p id="empty">Nothing waits for you.</p></section>
<section id="detail" aria-live="polite"></section></main>
<footer><kbd>j</kbd>/<kbd>k</kbd> move · <kbd>a</kbd> approve · <kbd>d</kbd> deny <span id="status" role="status"></span></footer>
</body></html>
`;
}
