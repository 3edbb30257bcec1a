import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomPrefix, startRedis, type TestRedis } from '../support/redis.js';

// API.md Processes: "SIGTERM drains in-flight rounds and exits 0", also when Redis is gone
// (closing connections to an unreachable Redis must not keep the process up).
const root = fileURLToPath(new URL('../..', import.meta.url));
let redis: TestRedis;

beforeAll(async () => {
  redis = await startRedis();
}, 60_000);
afterAll(async () => {
  await redis?.stop();
});

describe('when Redis is gone', () => {
  it('still exits 0 promptly on SIGTERM', async (ctx) => {
    if (!redis.kill) {
      ctx.skip(); // a shared REDIS_URL cannot be killed by the test; the spawned one can
      return;
    }
    const child = spawn(
      path.join(root, 'bin', 'tool-dispatch'),
      ['coordinator', '--port', '0', '--host', '127.0.0.1'],
      {
        cwd: root,
        env: { ...process.env, REDIS_URL: redis.url, TD_PREFIX: randomPrefix() },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`coordinator did not start:\n${out}`)), 60_000);
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('listening on')) {
          clearTimeout(timer);
          resolve();
        }
      });
    });
    await redis.kill();
    await new Promise((r) => setTimeout(r, 500));
    const t0 = Date.now();
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(Date.now() - t0).toBeLessThan(15_000);
  }, 90_000);
});
