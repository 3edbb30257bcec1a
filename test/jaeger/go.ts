// Go and the Jaeger of test/jaeger/tools (github.com/jaegertracing/jaeger/cmd/jaeger v1.75.0,
// a `tool` of that module): finding Go, building Jaeger once with progress lines, and the
// command that starts it (`go tool jaeger`). Shared by build.mjs (run by `pnpm test:jaeger`
// before the test) and the test itself.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The Go module that pins Jaeger as a tool (go.mod's `tool` line). */
export const TOOLS_DIR = fileURLToPath(new URL('./tools', import.meta.url));
/** The Jaeger v2 configuration the test starts it with (ports from JAEGER_*_PORT). */
export const JAEGER_CONFIG = fileURLToPath(new URL('./jaeger.yaml', import.meta.url));
/** How often a build still running says so. */
const PROGRESS_EVERY_MS = 15_000;

/**
 * The `go` command: $GO when set (and then only it), else `go` on PATH, else where Go's own
 * archive installs it (/usr/local/go/bin); null when there is none.
 */
export function findGo(env: NodeJS.ProcessEnv = process.env): string | null {
  if (env.GO) return existsSync(env.GO) ? env.GO : null;
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (dir && existsSync(join(dir, 'go'))) return join(dir, 'go');
  }
  return existsSync('/usr/local/go/bin/go') ? '/usr/local/go/bin/go' : null;
}

export const GO_MISSING =
  'test:jaeger: Go is not installed (no $GO, no `go` on PATH nor in /usr/local/go/bin): this test builds Jaeger with `go tool`; install Go 1.26 or newer';

/**
 * Builds Jaeger the way `go tool jaeger` runs it: `go tool -n jaeger` compiles what Go's build
 * cache lacks, links the binary into that cache and prints its path without starting it (the
 * first build takes minutes; a later one, seconds). Prints a line every 15 s while it runs.
 * Resolves with the seconds it took; rejects with Go's output when the build fails.
 */
export function buildJaeger(go: string, log = (line: string) => console.log(line)): Promise<number> {
  const started = Date.now();
  const seconds = () => Math.round((Date.now() - started) / 1000);
  log(
    'test:jaeger: building Jaeger v1.75.0 (`go tool jaeger`; the first build takes minutes, later ones reuse Go’s cache)',
  );
  return new Promise<number>((resolve, reject) => {
    const child = spawn(go, ['tool', '-n', 'jaeger'], { cwd: TOOLS_DIR, stdio: ['ignore', 'pipe', 'pipe'] });
    let path = '';
    let errors = '';
    let downloaded = 0;
    child.stdout.on('data', (chunk: Buffer) => {
      path += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      const text = chunk.toString();
      downloaded += text.split('\n').filter((line) => line.startsWith('go: downloading ')).length;
      errors = (errors + text).slice(-20_000);
    });
    const timer = setInterval(
      () => log(`test:jaeger: still building Jaeger (${seconds()} s; ${downloaded} modules downloaded)`),
      PROGRESS_EVERY_MS,
    );
    child.once('error', (e) => {
      clearInterval(timer);
      reject(e);
    });
    child.once('exit', (code) => {
      clearInterval(timer);
      if (code !== 0) {
        reject(new Error(`go tool -n jaeger (in ${TOOLS_DIR}) exited with ${code}:\n${errors}`));
        return;
      }
      log(`test:jaeger: Jaeger ready in ${seconds()} s (${downloaded} modules downloaded): ${path.trim()}`);
      resolve(seconds());
    });
  });
}
