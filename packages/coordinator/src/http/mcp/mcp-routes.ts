import { createHash } from 'node:crypto';
import { isValidId } from '@tool-dispatch/shared';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { principalOf } from '../access.js';
import { HttpError } from '../errors.js';
import { type ModernBinding, ModernMcp } from './mcp-2026.js';
import { rebindingProblem } from './mcp-origin.js';
import { answerQuietCall } from './mcp-quiet-call.js';
import type { McpService } from './mcp-service.js';
import type { McpSessionRecord } from './mcp-sessions.js';
import { createTask2025, isTaskCall2025 } from './mcp-tasks-2025.js';

export const MCP_PATH = '/mcp';

type Message = Record<string, unknown>;

const isObject = (v: unknown): v is Message => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A JSON-RPC error answered over HTTP (the transport's own errors: no session, unknown session). */
function rpcError(reply: FastifyReply, status: number, code: number, message: string): FastifyReply {
  return reply
    .code(status)
    .type('application/json; charset=utf-8')
    .send({ jsonrpc: '2.0', id: null, error: { code, message } });
}

/** `?session=` or `TD-Session`: the existing session the MCP session acts in (unknown: 404 in the error shape). */
async function boundSession(service: McpService, request: FastifyRequest): Promise<string | undefined> {
  const q = isObject(request.query) ? request.query.session : undefined;
  const h = request.headers['td-session'];
  const given = q ?? (typeof h === 'string' ? h : undefined);
  if (given === undefined) return undefined;
  if (!isValidId(given))
    throw new HttpError(400, 'invalid_request', `session ${JSON.stringify(given)} is not a valid id`);
  if (!(await service.dispatcher.getSession(given)))
    throw new HttpError(
      404,
      'session_not_found',
      `session ${given} does not exist; create it with PUT /v1/sessions/${given}, or connect to /mcp without ?session= for a new one`,
    );
  return given;
}

/** A 2026 request's session: the one it names, else `mcp-<token name>` (made on first use, in the token's tenant). */
function bindingOf(request: FastifyRequest, bound: string | undefined): ModernBinding {
  const { name, tenant } = principalOf(request);
  if (bound !== undefined) return { session: bound, principal: name };
  return { session: tokenSessionOf(name), create: { tenant: tenant === '*' ? undefined : tenant }, principal: name };
}

/** `mcp-<token name>`; a name that makes no session id (an `@`, too long): `mcp-` and 40 hex digits of its SHA-256. */
export function tokenSessionOf(name: string): string {
  const plain = `mcp-${name}`;
  return isValidId(plain) ? plain : `mcp-${createHash('sha256').update(name).digest('hex').slice(0, 40)}`;
}

/** TD_API_TOKENS: an MCP session acts in a session of the token's tenant only (another's is as if it did not exist). */
async function inTenant(service: McpService, request: FastifyRequest, record: McpSessionRecord): Promise<boolean> {
  const { tenant } = principalOf(request);
  if (tenant === '*') return true;
  return (await service.dispatcher.getSession(record.session))?.tenant === tenant;
}

/** The MCP session the request names (Mcp-Session-Id), or the JSON-RPC error answered already. */
async function sessionOf(service: McpService, request: FastifyRequest, reply: FastifyReply) {
  const id = request.headers['mcp-session-id'];
  if (typeof id !== 'string' || id === '') {
    rpcError(reply, 400, -32000, 'Bad Request: an Mcp-Session-Id header is required (send initialize first)');
    return undefined;
  }
  const record = await service.sessions.get(id);
  if (!record || !(await inTenant(service, request, record))) {
    rpcError(reply, 404, -32001, `Session not found: MCP session ${id} does not exist or has ended; initialize again`);
    return undefined;
  }
  return record;
}

/** (v1.3) A tools/call asking for a task (2025-11-25): answered here with its CreateTaskResult once stored. */
async function answeredAsTask(
  service: McpService,
  record: McpSessionRecord,
  owner: string,
  requests: Message[],
  reply: FastifyReply,
): Promise<boolean> {
  const tasks = service.tasks;
  const only = requests.length === 1 ? requests[0] : undefined;
  if (!tasks || !only || !isTaskCall2025(only)) return false;
  service.hooks.request?.('tools/call');
  await reply.type('application/json').send(await createTask2025(tasks, record, owner, only));
  return true;
}

/**
 * POST, GET and DELETE /mcp: Streamable HTTP (API.md "MCP server"). The session and the client's
 * answers and cancels are handled here and through the store; the JSON-RPC requests go to the
 * SDK's server on a stateless transport, one per request.
 */
export async function registerMcpRoutes(app: FastifyInstance, service: McpService): Promise<void> {
  const modern = new ModernMcp(service, service.runIdleMs);
  app.addHook('onClose', async () => modern.close());
  app.addHook('preHandler', async function refuseRebinding(request) {
    if ((request.url.split('?')[0] ?? '') !== MCP_PATH) return;
    const problem = rebindingProblem(request);
    if (problem) throw new HttpError(403, 'forbidden', problem);
  });
  app.post(MCP_PATH, async function mcpPost(request, reply) {
    const body = request.body;
    const messages = Array.isArray(body) ? body : [body];
    if (messages.length === 0 || !messages.every(isObject))
      return rpcError(reply, 400, -32700, 'Parse error: the body must be a JSON-RPC message or a batch of them');
    const bound = await boundSession(service, request);
    const init = messages.find((m) => m.method === 'initialize' && m.id !== undefined);
    // 2026-07-28: no initialize, no Mcp-Session-Id, the version in each request's _meta (the SDK classifies).
    if (!init && request.headers['mcp-session-id'] === undefined) {
      const web = await modern.classify(request, reply.raw, body);
      if (web) {
        // tools/list and tools/call count themselves in their handlers (as for 2025).
        for (const m of messages)
          if (typeof m.method === 'string' && m.method !== 'tools/call' && m.method !== 'tools/list')
            service.hooks.request?.(m.method);
        reply.hijack();
        await modern.serve(web, reply.raw, body, bindingOf(request, bound));
        return reply;
      }
    }
    return legacyPost(service, request, reply, init, bound);
  });

  app.get(MCP_PATH, async function mcpListen(request, reply) {
    await boundSession(service, request);
    if (!/text\/event-stream/.test(request.headers.accept ?? ''))
      return rpcError(reply, 406, -32000, 'Not Acceptable: GET /mcp needs Accept: text/event-stream');
    const record = await sessionOf(service, request, reply);
    if (!record) return reply;
    reply.hijack();
    service.listen(record, reply.raw);
    return reply;
  });

  app.delete(MCP_PATH, async function mcpEnd(request, reply) {
    const record = await sessionOf(service, request, reply);
    if (!record) return reply;
    service.hooks.request?.('DELETE');
    await service.end(record);
    return reply.code(200).send();
  });
}

/** A 2025-era POST /mcp (initialize, or a request of an MCP session): the v1.2 path. */
async function legacyPost(
  service: McpService,
  request: FastifyRequest,
  reply: FastifyReply,
  init: Message | undefined,
  bound: string | undefined,
): Promise<FastifyReply> {
  const body = request.body;
  const messages = (Array.isArray(body) ? body : [body]) as Message[];
  let record: McpSessionRecord | undefined;
  if (init) {
    const { tenant } = principalOf(request);
    const params = isObject(init.params) ? init.params : {};
    record = await service.initialize(params, bound, tenant === '*' ? undefined : tenant);
    reply.raw.setHeader('mcp-session-id', record.id);
  } else {
    record = await sessionOf(service, request, reply);
    if (!record) return reply;
  }
  const requests: Message[] = [];
  for (const m of messages) {
    if (typeof m.method === 'string' && m.id !== undefined) requests.push(m);
    else if (typeof m.method === 'string') await service.notified(record, m);
    else await service.answered(record, m, principalOf(request).name);
  }
  if (requests.length === 0) return reply.code(202).send();
  const owner = principalOf(request).name;
  if (await answeredAsTask(service, record, owner, requests, reply)) return reply;
  const quiet = await answerQuietCall(service, record, request.headers, body);
  reply.hijack();
  if (quiet) {
    // As the SDK's transport writes its JSON answer (its header, no charset), past fastify's hooks as it is.
    reply.raw.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(quiet));
    return reply;
  }
  for (const m of requests)
    if (m.method !== 'tools/call' && m.method !== 'tools/list') service.hooks.request?.(String(m.method));
  await service.serveRequests(record, request.raw, reply.raw, Array.isArray(body) ? requests : requests[0], owner);
  return reply;
}
