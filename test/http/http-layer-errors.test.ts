import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchSchemas, type Harness, putSession, round, rt, startHarness, uid } from './harness.js';
import { exchange, expectContractError, head, type RawResponse } from './raw-http.js';

const portOf = (h: Harness) => Number(new URL(h.base).port);

/** The server still answers a well-formed request, on a new connection, after the case before. */
async function expectStillServing(h: Harness): Promise<void> {
  const res = await exchange(portOf(h), [head('GET /healthz HTTP/1.1', 'Host: x', 'Connection: close')]);
  expect(res.status).toBe(200);
  expect(JSON.parse(res.body)).toEqual({ status: 'ok' });
}

/** An error written on the raw socket: the contract shape, and the connection closed after it. */
function expectClosingContractError(res: RawResponse, status: number, code: string): void {
  expectContractError(res, status, code);
  expect(res.headers.connection?.toLowerCase()).toBe('close');
  expect(res.closed).toBe(true);
}

async function expectNoSession(h: Harness, session: string): Promise<void> {
  expect((await h.api('GET', `/v1/sessions/${session}`)).status).toBe(404);
}

const sessionBody = JSON.stringify({ provider: 'openai' });

describe('errors of the HTTP layer', () => {
  let h: Harness;
  const internalErrors: unknown[] = [];
  beforeAll(async () => {
    h = await startHarness({ server: { onInternalError: (e) => internalErrors.push(e) } });
  });
  afterAll(() => h.close());

  describe('when the bytes are not HTTP the parser accepts', () => {
    it('answers a body shorter than its Content-Length, then a half-close, with 400 in the contract shape', async () => {
      const s = uid('short');
      const res = await exchange(
        portOf(h),
        [
          head(`PUT /v1/sessions/${s} HTTP/1.1`, 'Host: x', 'Content-Type: application/json', 'Content-Length: 100'),
          sessionBody,
        ],
        { after: 'half-close' },
      );
      expectClosingContractError(res, 400, 'invalid_request');
      await expectNoSession(h, s);
      await expectStillServing(h);
    });

    it('answers a garbage request line with 400 in the contract shape', async () => {
      const res = await exchange(portOf(h), ['\x01\x02 garbage \x7f\r\n\r\n']);
      expectClosingContractError(res, 400, 'invalid_request');
      await expectStillServing(h);
    });

    it('answers a request line without an HTTP version with 400 in the contract shape', async () => {
      const res = await exchange(portOf(h), ['GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n']);
      expectClosingContractError(res, 400, 'invalid_request');
      await expectStillServing(h);
    });

    it('answers a NUL in a header with 400 in the contract shape', async () => {
      const res = await exchange(portOf(h), [head('GET /healthz HTTP/1.1', 'Host: x', 'X-Bad: a\0b')]);
      expectClosingContractError(res, 400, 'invalid_request');
      await expectStillServing(h);
    });

    it('answers Content-Length together with Transfer-Encoding with 400 in the contract shape', async () => {
      const s = uid('clte');
      const res = await exchange(portOf(h), [
        head(`PUT /v1/sessions/${s} HTTP/1.1`, 'Host: x', 'Content-Length: 22', 'Transfer-Encoding: chunked'),
        `16\r\n${sessionBody}\r\n0\r\n\r\n`,
      ]);
      expectClosingContractError(res, 400, 'invalid_request');
      await expectNoSession(h, s);
      await expectStillServing(h);
    });

    it('answers a Content-Length that is not a number with 400 in the contract shape', async () => {
      const res = await exchange(portOf(h), [head('PUT /v1/sessions/x HTTP/1.1', 'Host: x', 'Content-Length: 12abc')]);
      expectClosingContractError(res, 400, 'invalid_request');
      await expectStillServing(h);
    });

    it('answers headers over 16 KiB with 431 headers_too_large in the contract shape', async () => {
      const res = await exchange(portOf(h), [
        head('GET /healthz HTTP/1.1', 'Host: x', `X-Big: ${'a'.repeat(17 * 1024)}`),
      ]);
      expectClosingContractError(res, 431, 'headers_too_large');
      await expectStillServing(h);
    });

    it('answers an invalid chunked encoding with 400 in the contract shape, and creates nothing', async () => {
      const s = uid('chunk');
      const res = await exchange(portOf(h), [
        head(`PUT /v1/sessions/${s} HTTP/1.1`, 'Host: x', 'Transfer-Encoding: chunked'),
        `zz\r\n${sessionBody}\r\n0\r\n\r\n`,
      ]);
      expectClosingContractError(res, 400, 'invalid_request');
      await expectNoSession(h, s);
      await expectStillServing(h);
    });
  });

  describe('when no route takes the request', () => {
    it('answers an unknown path with 404 not_found in the contract shape', async () => {
      const res = await exchange(portOf(h), [head('GET /v1/nothing-here HTTP/1.1', 'Host: x')]);
      expectContractError(res, 404, 'not_found');
      await expectStillServing(h);
    });

    it('answers a method the path does not have with 405 method_not_allowed, naming the allowed ones', async () => {
      const res = await exchange(portOf(h), [
        head(
          `PATCH /v1/sessions/${uid('s')} HTTP/1.1`,
          'Host: x',
          'Content-Type: application/json',
          'Content-Length: 2',
        ),
        '{}',
      ]);
      expectContractError(res, 405, 'method_not_allowed');
      expect(res.headers.allow?.split(/,\s*/).sort()).toEqual(['GET', 'HEAD', 'PUT']);
      await expectStillServing(h);
    });

    it('answers POST on a GET-only operation path with 405 method_not_allowed', async () => {
      const res = await exchange(portOf(h), [head('POST /healthz HTTP/1.1', 'Host: x', 'Content-Length: 0')]);
      expectContractError(res, 405, 'method_not_allowed');
      expect(res.headers.allow?.split(/,\s*/).sort()).toEqual(['GET', 'HEAD']);
      await expectStillServing(h);
    });
  });

  describe('when Node would answer in a bare shape of its own', () => {
    it('answers an HTTP/1.1 request without a Host header with 400 in the contract shape', async () => {
      const res = await exchange(portOf(h), ['GET /healthz HTTP/1.1\r\n\r\n']);
      expectClosingContractError(res, 400, 'invalid_request');
      await expectStillServing(h);
    });

    it('answers CONNECT with 405 method_not_allowed in the contract shape', async () => {
      const res = await exchange(portOf(h), [head('CONNECT example.com:443 HTTP/1.1', 'Host: example.com:443')]);
      expectClosingContractError(res, 405, 'method_not_allowed');
      await expectStillServing(h);
    });

    it('answers an Expect other than 100-continue with 417 expectation_failed in the contract shape', async () => {
      const s = uid('expect');
      const res = await exchange(portOf(h), [
        head(`PUT /v1/sessions/${s} HTTP/1.1`, 'Host: x', 'Expect: 200-ok', `Content-Length: ${sessionBody.length}`),
        sessionBody,
      ]);
      expectContractError(res, 417, 'expectation_failed');
      await expectNoSession(h, s);
      await expectStillServing(h);
    });
  });

  describe('when the body is unusable', () => {
    it('answers a body that is not JSON with 400 invalid_json in the contract shape', async () => {
      const s = uid('json');
      const res = await exchange(portOf(h), [
        head(`PUT /v1/sessions/${s} HTTP/1.1`, 'Host: x', 'Content-Type: application/json', 'Content-Length: 12'),
        '{"provider":',
      ]);
      expectContractError(res, 400, 'invalid_json');
      await expectNoSession(h, s);
      await expectStillServing(h);
    });

    it('answers an empty body where one is needed with 400 invalid_request in the contract shape', async () => {
      const s = uid('empty');
      const res = await exchange(portOf(h), [
        head(`PUT /v1/sessions/${s} HTTP/1.1`, 'Host: x', 'Content-Type: application/json', 'Content-Length: 0'),
      ]);
      expectContractError(res, 400, 'invalid_request');
      await expectNoSession(h, s);
      await expectStillServing(h);
    });

    it('reads a JSON body whatever its Content-Type says, even one that is not a media type', async () => {
      for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data', '???']) {
        const s = uid('type');
        const res = await exchange(portOf(h), [
          head(
            `PUT /v1/sessions/${s} HTTP/1.1`,
            'Host: x',
            `Content-Type: ${type}`,
            `Content-Length: ${sessionBody.length}`,
          ),
          sessionBody,
        ]);
        expect(res.status, `${type}: ${res.body}`).toBe(200);
      }
    });

    it('answers a body over the size limit with 413 payload_too_large in the contract shape', async () => {
      const s = uid('big');
      const size = 5 * 1024 * 1024;
      const res = await exchange(portOf(h), [
        head(`PUT /v1/sessions/${s} HTTP/1.1`, 'Host: x', 'Content-Type: application/json', `Content-Length: ${size}`),
        Buffer.alloc(size, 'x'),
      ]);
      expectContractError(res, 413, 'payload_too_large');
      await expectNoSession(h, s);
      await expectStillServing(h);
    });

    it('drops a request whose client resets the connection mid-body, changing nothing and logging no internal error', async () => {
      const s = uid('reset');
      const before = internalErrors.length;
      await new Promise<void>((resolve, reject) => {
        const socket = connect({ port: portOf(h), host: '127.0.0.1' });
        socket.on('error', () => undefined);
        socket.on('close', () => resolve());
        socket.on('connect', () => {
          socket.write(head(`PUT /v1/sessions/${s} HTTP/1.1`, 'Host: x', 'Content-Length: 100') + sessionBody, (e) => {
            if (e) reject(e);
            else setTimeout(() => socket.resetAndDestroy(), 50);
          });
        });
      });
      await new Promise((r) => setTimeout(r, 100));
      await expectNoSession(h, s);
      expect(internalErrors.slice(before)).toEqual([]);
      await expectStillServing(h);
    });
  });
});

describe('when a client is too slow to send its request', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ server: { timeouts: { headersMs: 300, requestMs: 600 } } });
  });
  afterAll(() => h.close());

  it('answers a body shorter than its Content-Length with 408 request_timeout once the request timeout passes', async () => {
    const s = uid('slow');
    const started = Date.now();
    const res = await exchange(portOf(h), [
      head(`PUT /v1/sessions/${s} HTTP/1.1`, 'Host: x', 'Content-Type: application/json', 'Content-Length: 100'),
      sessionBody,
    ]);
    expectClosingContractError(res, 408, 'request_timeout');
    expect(Date.now() - started).toBeGreaterThanOrEqual(500);
    await expectNoSession(h, s);
    await expectStillServing(h);
  });

  it('answers headers that never end with 408 request_timeout once the headers timeout passes', async () => {
    const res = await exchange(portOf(h), ['GET /healthz HTTP/1.1\r\nHost: x\r\n']);
    expectClosingContractError(res, 408, 'request_timeout');
    await expectStillServing(h);
  });

  it('does not time out a round that runs longer than the request timeout once its body arrived', async () => {
    const s = uid('long');
    await putSession(h, s, { provider: 'openai', autoApprove: 'all' });
    await fetchSchemas(h, s, ['run_command']);
    const started = Date.now();
    const r = await round(h, s, uid('run'), [rt('run_command', { command: 'sleep 1.2' })]);
    expect(r.results[0].status, JSON.stringify(r.results[0])).toBe('ok');
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
  });

  it('leaves an idle keep-alive connection alone past the request timeout', async () => {
    const socket = connect({ port: portOf(h), host: '127.0.0.1' });
    let received = '';
    let closed = false;
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
    });
    socket.on('close', () => {
      closed = true;
    });
    socket.write(head('GET /healthz HTTP/1.1', 'Host: x'));
    await new Promise((r) => setTimeout(r, 1500));
    expect(received).toMatch(/^HTTP\/1\.1 200 /);
    expect(received).not.toContain('408');
    expect(closed).toBe(false);
    socket.destroy();
    await expectStillServing(h);
  });
});
