import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Service, startService } from '../conformance/service.js';
import { startTargetServer, type TargetServer } from '../conformance/target-server.js';

// DNS rebinding protection of /mcp (docs/api.md "MCP server"): a request that reached it on a
// loopback address must name a loopback host, and one with an Origin must come from the host it
// was sent to; otherwise 403 `forbidden` in the error shape, before anything else happens. Against
// `bin/tool-dispatch dev` without a token, the case the protection is for.

let service: Service | undefined;
let target: TargetServer | undefined;

beforeAll(async () => {
  target = await startTargetServer();
  service = await startService({ mode: 'embedded', target });
}, 150_000);

afterAll(async () => {
  await service?.stop();
  await target?.close();
});

const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'rebinding-test', version: '1' } },
};

/** POST /mcp with these Host and Origin headers (node:http, which lets a test set Host). */
function post(headers: Record<string, string>): Promise<{ status: number; body: string }> {
  const url = new URL(`${service?.base}/mcp`);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: '/mcp',
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      },
      (res) => {
        let body = '';
        res.on('data', (c) => {
          body += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(INIT));
  });
}

describe('/mcp DNS rebinding protection', () => {
  it('refuses a Host that is not a loopback name on a loopback address, saying why', async () => {
    const r = await post({ host: `evil.example.com:${new URL(service?.base ?? '').port}` });
    expect(r.status).toBe(403);
    expect(JSON.parse(r.body)).toEqual({
      error: {
        code: 'forbidden',
        message: expect.stringMatching(/Host "evil\.example\.com:\d+" is not a loopback name/),
      },
    });
  });

  it('refuses an Origin other than the host the request was sent to', async () => {
    const port = new URL(service?.base ?? '').port;
    const r = await post({ host: `127.0.0.1:${port}`, origin: 'http://evil.example.com' });
    expect(r.status).toBe(403);
    expect(JSON.parse(r.body).error.message).toMatch(/Origin "http:\/\/evil\.example\.com" is not the host/);
  });

  it('answers localhost, 127.0.0.1 and [::1] hosts, with or without their own Origin', async () => {
    const port = new URL(service?.base ?? '').port;
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`]) {
      const bare = await post({ host });
      expect(bare.status, `${host}: ${bare.body}`).toBe(200);
      const same = await post({ host, origin: `http://${host}` });
      expect(same.status, `${host} with its Origin: ${same.body}`).toBe(200);
    }
  });
});
