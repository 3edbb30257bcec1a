import { readFileSync } from 'node:fs';
import { ConfigError, MCP_SERVER_NAME, type SandboxNet, sandboxNetOf, sandboxReadOf } from '@tool-dispatch/shared';

/** Which of a server's tools pass the confirm gate: all, none, or those named (by their names on the server). */
export type McpConfirm = boolean | readonly string[];

interface McpServerCommon {
  /** The server's name in the file (`^[A-Za-z0-9_-]{1,32}$`). */
  name: string;
  confirm: McpConfirm;
  /** Its tools' deadline (absent: the default, 60 s). */
  timeoutMs?: number;
}

/** A server the worker starts as a child process and speaks to over stdio. */
export interface McpStdioServer extends McpServerCommon {
  transport: 'stdio';
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd?: string;
  /**
   * (v1.3) `"sandbox": true` or `{"net"?: [patterns], "read"?: [host paths]}`: the server runs in a
   * sandbox of its own (a private working directory, `read` read-only, network as `net`, none by default).
   */
  sandbox?: McpSandbox;
}

/** A sandboxed stdio server's network and extra read-only paths. */
export interface McpSandbox {
  net: SandboxNet;
  read: string[];
}

/** A server the worker reaches over Streamable HTTP. */
export interface McpHttpServer extends McpServerCommon {
  transport: 'http';
  url: string;
  headers: Record<string, string>;
}

export type McpServerConfig = McpStdioServer | McpHttpServer;

/** A TD_MCP_CONFIG file read: its servers, and what in it was ignored (worth a log line). */
export interface McpConfig {
  servers: McpServerConfig[];
  warnings: string[];
}

const KNOWN_KEYS = new Set([
  'command',
  'args',
  'env',
  'cwd',
  'url',
  'headers',
  'confirm',
  'timeoutMs',
  'type',
  'disabled',
  'sandbox',
]);
/** `type` values agent clients write for the transports this client speaks. */
const STDIO_TYPES = new Set(['stdio']);
const HTTP_TYPES = new Set(['http', 'streamable-http', 'streamableHttp']);
const MAX_TIMEOUT_MS = 2_147_483_647;

type Entry = Record<string, unknown>;

const isObject = (v: unknown): v is Entry => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Reads and checks a TD_MCP_CONFIG file; a problem is a ConfigError naming the file and what is wrong. */
export function loadMcpConfig(file: string): McpConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new ConfigError(`TD_MCP_CONFIG ${file}: cannot read it (${e instanceof Error ? e.message : String(e)})`);
  }
  return parseMcpConfig(text, file);
}

/**
 * Checks a config in the `mcpServers` format agent clients use (API.md "MCP servers"): each
 * server stdio (`command`, `args`, `env`, `cwd`) or Streamable HTTP (`url`, `headers`), with
 * `confirm` and `timeoutMs`. `"disabled": true` leaves a server out; unknown keys are warnings.
 */
export function parseMcpConfig(text: string, source: string): McpConfig {
  const where = `TD_MCP_CONFIG ${source}`;
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    // V8 quotes the text around the fault, newlines and all: one line, as the CLI prints it.
    const why = (e instanceof Error ? e.message : String(e)).replace(/\s+/g, ' ');
    throw new ConfigError(`${where} is not valid JSON: ${why}`);
  }
  if (!isObject(doc) || !isObject(doc.mcpServers))
    throw new ConfigError(`${where} must be a JSON object with an "mcpServers" object`);
  const servers: McpServerConfig[] = [];
  const warnings: string[] = [];
  for (const [name, entry] of Object.entries(doc.mcpServers)) {
    const at = `${where}: server ${JSON.stringify(name)}`;
    if (!MCP_SERVER_NAME.test(name))
      throw new ConfigError(
        `${at}: a server name must match ^[A-Za-z0-9_-]{1,32}$ (letters, digits, _ and -, at most 32)`,
      );
    if (!isObject(entry)) throw new ConfigError(`${at} must be an object`);
    for (const key of Object.keys(entry))
      if (!KNOWN_KEYS.has(key)) warnings.push(`${at}: ignored unknown key ${JSON.stringify(key)}`);
    if (entry.disabled === true) continue;
    servers.push(serverOf(name, entry, at));
  }
  return { servers, warnings };
}

function serverOf(name: string, entry: Entry, at: string): McpServerConfig {
  const common: McpServerCommon = { name, confirm: confirmOf(entry.confirm, at) };
  if (entry.timeoutMs !== undefined) common.timeoutMs = timeoutOf(entry.timeoutMs, at);
  const type = entry.type;
  if (type !== undefined && (typeof type !== 'string' || !(STDIO_TYPES.has(type) || HTTP_TYPES.has(type))))
    throw new ConfigError(
      `${at}: "type" ${JSON.stringify(type)} is not one this client speaks (stdio, or http for Streamable HTTP)`,
    );
  const hasCommand = entry.command !== undefined;
  const hasUrl = entry.url !== undefined;
  if (hasCommand === hasUrl)
    throw new ConfigError(
      `${at} needs exactly one of "command" (a stdio server) or "url" (a Streamable HTTP server); it has ${hasCommand ? 'both' : 'neither'}`,
    );
  if (hasCommand) {
    if (typeof type === 'string' && !STDIO_TYPES.has(type))
      throw new ConfigError(`${at}: "type" ${type} needs a "url", not a "command"`);
    return stdioOf(common, entry, at);
  }
  if (typeof type === 'string' && !HTTP_TYPES.has(type))
    throw new ConfigError(`${at}: "type" ${type} needs a "command", not a "url"`);
  return httpOf(common, entry, at);
}

function stdioOf(common: McpServerCommon, entry: Entry, at: string): McpStdioServer {
  if (typeof entry.command !== 'string' || entry.command.trim() === '')
    throw new ConfigError(`${at}: "command" must be a non-empty string`);
  for (const key of ['url', 'headers'] as const)
    if (entry[key] !== undefined)
      throw new ConfigError(`${at}: "${key}" belongs to a Streamable HTTP server, not a stdio one`);
  const server: McpStdioServer = {
    ...common,
    transport: 'stdio',
    command: entry.command,
    args: stringList(entry.args, `${at}: "args"`),
    env: stringMap(entry.env, `${at}: "env"`),
  };
  if (entry.cwd !== undefined) {
    if (typeof entry.cwd !== 'string' || entry.cwd === '')
      throw new ConfigError(`${at}: "cwd" must be a non-empty string`);
    server.cwd = entry.cwd;
  }
  const sandbox = sandboxOf(entry.sandbox, `${at}: "sandbox"`);
  if (sandbox) server.sandbox = sandbox;
  return server;
}

/** `"sandbox"`: absent or false (none), true (the defaults), or `{"net"?: [...], "read"?: [...]}`. */
function sandboxOf(value: unknown, at: string): McpSandbox | undefined {
  if (value === undefined || value === false) return undefined;
  if (value === true) return { net: { mode: 'none' }, read: [] };
  if (!isObject(value))
    throw new ConfigError(`${at} must be true, false or {"net"?: [host[:port] patterns], "read"?: [host paths]}`);
  const unknown = Object.keys(value).filter((k) => k !== 'net' && k !== 'read');
  if (unknown.length)
    throw new ConfigError(`${at} takes "net" and "read", not ${unknown.map((k) => `"${k}"`).join(', ')}`);
  const net = stringList(value.net, `${at}.net`);
  const read = stringList(value.read, `${at}.read`);
  if (net.some((p) => p.includes(','))) throw new ConfigError(`${at}.net: one host[:port] pattern per entry`);
  return {
    net: net.length ? sandboxNetOf(net.join(','), `${at}.net`) : { mode: 'none' },
    read: sandboxReadOf(read.join(','), `${at}.read`),
  };
}

function httpOf(common: McpServerCommon, entry: Entry, at: string): McpHttpServer {
  for (const key of ['args', 'env', 'cwd', 'sandbox'] as const)
    if (entry[key] !== undefined)
      throw new ConfigError(`${at}: "${key}" belongs to a stdio server, not a Streamable HTTP one`);
  let url: URL;
  try {
    url = new URL(String(entry.url));
  } catch {
    throw new ConfigError(`${at}: "url" ${JSON.stringify(entry.url)} is not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ConfigError(`${at}: "url" must be http:// or https://, is ${url.protocol}`);
  return { ...common, transport: 'http', url: url.toString(), headers: stringMap(entry.headers, `${at}: "headers"`) };
}

function confirmOf(value: unknown, at: string): McpConfirm {
  if (value === undefined) return false;
  if (typeof value === 'boolean') return value;
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value;
  throw new ConfigError(`${at}: "confirm" must be true, false or a list of the server's tool names`);
}

function timeoutOf(value: unknown, at: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_TIMEOUT_MS)
    throw new ConfigError(`${at}: "timeoutMs" must be a positive integer of milliseconds (at most ${MAX_TIMEOUT_MS})`);
  return value;
}

function stringList(value: unknown, what: string): string[] {
  if (value === undefined) return [];
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string'))
    throw new ConfigError(`${what} must be a list of strings`);
  return value;
}

function stringMap(value: unknown, what: string): Record<string, string> {
  if (value === undefined) return {};
  if (!isObject(value) || !Object.values(value).every((v) => typeof v === 'string'))
    throw new ConfigError(`${what} must be an object of string values`);
  return { ...value } as Record<string, string>;
}
