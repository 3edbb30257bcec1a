// A real headless Chromium for browser tests: Debian's `chromium` (scripts/setup.sh installs it),
// driven by playwright-core, which never downloads a browser of its own.
import { existsSync } from 'node:fs';
import { type Browser, type BrowserContext, chromium, type Request } from 'playwright-core';

export const CHROMIUM_PATH = '/usr/bin/chromium';

/** Flags that keep the browser from calling home (updates, field trials, sign-in) while a test runs. */
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
];

/** Launches Chromium; fails (never skips) naming the fix when it is not installed. */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(
      `${CHROMIUM_PATH} is missing: the browser tests need Debian's chromium (apt-get install -y chromium, or scripts/setup.sh)`,
    );
  }
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: CHROMIUM_ARGS });
}

const LOOPBACK_HOSTS = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** True for a URL the page may load in a test: loopback over http(s), or inline data. */
export function isLoopback(url: string): boolean {
  const u = new URL(url);
  if (u.protocol === 'data:' || u.protocol === 'blob:') return true;
  return (u.protocol === 'http:' || u.protocol === 'https:') && LOOPBACK_HOSTS.has(u.hostname);
}

export interface RecordedTraffic {
  /** Every URL the context requested, in order (refused ones included). */
  readonly requests: string[];
  /** Console messages about a Content-Security-Policy violation. */
  readonly cspViolations: string[];
}

/**
 * Records every request a context's pages make, and answers those leaving loopback with a
 * network error, so a test sees an attempt without the machine ever reaching the internet.
 */
export async function recordTraffic(context: BrowserContext): Promise<RecordedTraffic> {
  const traffic: RecordedTraffic = { requests: [], cspViolations: [] };
  context.on('request', (request: Request) => {
    traffic.requests.push(request.url());
  });
  context.on('console', (message) => {
    if (/Content Security Policy/i.test(message.text())) traffic.cspViolations.push(message.text());
  });
  await context.route(
    (url) => !isLoopback(url.href),
    (route) => route.abort('blockedbyclient'),
  );
  return traffic;
}
