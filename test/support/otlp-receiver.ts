/**
 * A tiny OTLP/HTTP trace receiver for tests: `POST /v1/traces` in http/protobuf or http/json
 * (gzip or not), on 127.0.0.1 at a free port. It keeps every span it was sent, flattened.
 * Point a process at it with OTEL_EXPORTER_OTLP_ENDPOINT=receiver.url.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync, inflateSync } from 'node:zlib';

export type AttributeValue =
  | string
  | number
  | boolean
  | bigint
  | null
  | AttributeValue[]
  | { [key: string]: AttributeValue };

export type ReceivedSpanKind = 'unspecified' | 'internal' | 'server' | 'client' | 'producer' | 'consumer';

export interface ReceivedEvent {
  name: string;
  attributes: Record<string, AttributeValue>;
}

export interface ReceivedSpan {
  /** 32 lowercase hex digits. */
  traceId: string;
  /** 16 lowercase hex digits. */
  spanId: string;
  /** Absent for a root span. */
  parentSpanId?: string;
  name: string;
  kind: ReceivedSpanKind;
  /** The resource's service.name. */
  serviceName: string;
  scopeName: string;
  attributes: Record<string, AttributeValue>;
  resource: Record<string, AttributeValue>;
  events: ReceivedEvent[];
  /** 0 unset, 1 ok, 2 error (OTLP StatusCode). */
  statusCode: number;
  statusMessage?: string;
  startTimeUnixNano: bigint;
  endTimeUnixNano: bigint;
}

export interface ReceivedRequest {
  contentType: string;
  contentEncoding: string | undefined;
  spans: number;
}

export interface OtlpReceiver {
  /** Base URL, for OTEL_EXPORTER_OTLP_ENDPOINT. */
  readonly url: string;
  /** `${url}/v1/traces`, for OTEL_EXPORTER_OTLP_TRACES_ENDPOINT. */
  readonly tracesUrl: string;
  /** Every span received so far, in arrival order. */
  readonly spans: readonly ReceivedSpan[];
  readonly requests: readonly ReceivedRequest[];
  /** Resolves with all spans once `done(spans)` holds; rejects after `timeoutMs` listing what arrived. */
  waitFor(done: (spans: readonly ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<readonly ReceivedSpan[]>;
  /** Resolves once a span of each name has arrived. */
  waitForNames(names: readonly string[], timeoutMs?: number): Promise<readonly ReceivedSpan[]>;
  /** Forgets what was received. */
  clear(): void;
  close(): Promise<void>;
}

const KINDS: readonly ReceivedSpanKind[] = ['unspecified', 'internal', 'server', 'client', 'producer', 'consumer'];
const MAX_BODY_BYTES = 32 * 1024 * 1024;

// ---------------------------------------------------------------------------------------
// Protobuf: just enough of the wire format to read opentelemetry.proto.collector.trace.v1.
// ---------------------------------------------------------------------------------------

type Field =
  | { no: number; wire: 0; value: bigint }
  | { no: number; wire: 1 | 5; bytes: Buffer }
  | { no: number; wire: 2; bytes: Buffer };

function readVarint(buf: Buffer, at: { pos: number }): bigint {
  let result = 0n;
  let shift = 0n;
  for (;;) {
    if (at.pos >= buf.length) throw new Error('truncated varint');
    const byte = buf[at.pos++] as number;
    result |= BigInt(byte & 0x7f) << shift;
    if ((byte & 0x80) === 0) return result;
    shift += 7n;
  }
}

function* fields(buf: Buffer): Generator<Field> {
  const at = { pos: 0 };
  while (at.pos < buf.length) {
    const tag = Number(readVarint(buf, at));
    const no = tag >>> 3;
    const wire = tag & 7;
    if (wire === 0) yield { no, wire, value: readVarint(buf, at) };
    else if (wire === 1 || wire === 5) {
      const size = wire === 1 ? 8 : 4;
      yield { no, wire, bytes: buf.subarray(at.pos, at.pos + size) };
      at.pos += size;
    } else if (wire === 2) {
      const len = Number(readVarint(buf, at));
      yield { no, wire, bytes: buf.subarray(at.pos, at.pos + len) };
      at.pos += len;
    } else throw new Error(`unsupported protobuf wire type ${wire}`);
  }
}

function bytesOf(f: Field): Buffer {
  if (f.wire === 0) throw new Error(`field ${f.no}: expected bytes`);
  return f.bytes;
}

function decodeAnyValue(buf: Buffer): AttributeValue {
  let value: AttributeValue = null;
  for (const f of fields(buf)) {
    if (f.no === 1) value = bytesOf(f).toString('utf8');
    else if (f.no === 2 && f.wire === 0) value = f.value !== 0n;
    else if (f.no === 3 && f.wire === 0) value = Number(BigInt.asIntN(64, f.value));
    else if (f.no === 4) value = bytesOf(f).readDoubleLE(0);
    else if (f.no === 5)
      value = [...fields(bytesOf(f))].filter((g) => g.no === 1).map((g) => decodeAnyValue(bytesOf(g)));
    else if (f.no === 6) value = decodeKeyValues([...fields(bytesOf(f))].filter((g) => g.no === 1).map(bytesOf));
    else if (f.no === 7) value = bytesOf(f).toString('base64');
  }
  return value;
}

function decodeKeyValues(list: Buffer[]): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const kv of list) {
    let key = '';
    let value: AttributeValue = null;
    for (const f of fields(kv)) {
      if (f.no === 1) key = bytesOf(f).toString('utf8');
      else if (f.no === 2) value = decodeAnyValue(bytesOf(f));
    }
    out[key] = value;
  }
  return out;
}

function decodeProtoSpan(buf: Buffer, resource: Record<string, AttributeValue>, scopeName: string): ReceivedSpan {
  const attrs: Buffer[] = [];
  const events: ReceivedEvent[] = [];
  const span: ReceivedSpan = {
    traceId: '',
    spanId: '',
    name: '',
    kind: 'unspecified',
    serviceName: String(resource['service.name'] ?? ''),
    scopeName,
    attributes: {},
    resource,
    events,
    statusCode: 0,
    startTimeUnixNano: 0n,
    endTimeUnixNano: 0n,
  };
  for (const f of fields(buf)) {
    if (f.no === 1) span.traceId = bytesOf(f).toString('hex');
    else if (f.no === 2) span.spanId = bytesOf(f).toString('hex');
    else if (f.no === 4 && bytesOf(f).length > 0) span.parentSpanId = bytesOf(f).toString('hex');
    else if (f.no === 5) span.name = bytesOf(f).toString('utf8');
    else if (f.no === 6 && f.wire === 0) span.kind = KINDS[Number(f.value)] ?? 'unspecified';
    else if (f.no === 7) span.startTimeUnixNano = bytesOf(f).readBigUInt64LE(0);
    else if (f.no === 8) span.endTimeUnixNano = bytesOf(f).readBigUInt64LE(0);
    else if (f.no === 9) attrs.push(bytesOf(f));
    else if (f.no === 11) events.push(decodeProtoEvent(bytesOf(f)));
    else if (f.no === 15) {
      for (const g of fields(bytesOf(f))) {
        if (g.no === 2) span.statusMessage = bytesOf(g).toString('utf8');
        else if (g.no === 3 && g.wire === 0) span.statusCode = Number(g.value);
      }
    }
  }
  span.attributes = decodeKeyValues(attrs);
  return span;
}

function decodeProtoEvent(buf: Buffer): ReceivedEvent {
  let name = '';
  const attrs: Buffer[] = [];
  for (const f of fields(buf)) {
    if (f.no === 2) name = bytesOf(f).toString('utf8');
    else if (f.no === 3) attrs.push(bytesOf(f));
  }
  return { name, attributes: decodeKeyValues(attrs) };
}

/** Decodes an ExportTraceServiceRequest. */
export function decodeProtobufTraces(body: Buffer): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const rs of fields(body)) {
    if (rs.no !== 1) continue;
    let resource: Record<string, AttributeValue> = {};
    const scopeSpans: Buffer[] = [];
    for (const f of fields(bytesOf(rs))) {
      if (f.no === 1) {
        resource = decodeKeyValues([...fields(bytesOf(f))].filter((g) => g.no === 1).map(bytesOf));
      } else if (f.no === 2) scopeSpans.push(bytesOf(f));
    }
    for (const ss of scopeSpans) {
      let scopeName = '';
      const raw: Buffer[] = [];
      for (const f of fields(ss)) {
        if (f.no === 1) {
          for (const g of fields(bytesOf(f))) if (g.no === 1) scopeName = bytesOf(g).toString('utf8');
        } else if (f.no === 2) raw.push(bytesOf(f));
      }
      for (const s of raw) spans.push(decodeProtoSpan(s, resource, scopeName));
    }
  }
  return spans;
}

// ---------------------------------------------------------------------------------------
// JSON (OTLP/JSON: ids in hex; int64 as string or number).
// ---------------------------------------------------------------------------------------

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

function obj(v: Json | undefined): { [key: string]: Json } {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? v : {};
}

function arr(v: Json | undefined): Json[] {
  return Array.isArray(v) ? v : [];
}

/** OTLP/JSON ids are hex; tolerate base64 (protobuf's JSON mapping) as well. */
function jsonId(v: Json | undefined, hexLength: number): string {
  if (typeof v !== 'string' || v === '') return '';
  if (v.length === hexLength && /^[0-9a-fA-F]+$/.test(v)) return v.toLowerCase();
  return Buffer.from(v, 'base64').toString('hex');
}

function jsonAnyValue(v: Json | undefined): AttributeValue {
  const o = obj(v);
  if ('stringValue' in o) return String(o.stringValue);
  if ('boolValue' in o) return o.boolValue === true;
  if ('intValue' in o) return Number(o.intValue);
  if ('doubleValue' in o) return Number(o.doubleValue);
  if ('arrayValue' in o) return arr(obj(o.arrayValue).values).map(jsonAnyValue);
  if ('kvlistValue' in o) return jsonKeyValues(obj(o.kvlistValue).values);
  if ('bytesValue' in o) return String(o.bytesValue);
  return null;
}

function jsonKeyValues(v: Json | undefined): Record<string, AttributeValue> {
  const out: Record<string, AttributeValue> = {};
  for (const kv of arr(v)) out[String(obj(kv).key)] = jsonAnyValue(obj(kv).value);
  return out;
}

/** Decodes an ExportTraceServiceRequest in OTLP/JSON. */
export function decodeJsonTraces(body: unknown): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const rs of arr(obj(body as Json).resourceSpans)) {
    const resource = jsonKeyValues(obj(obj(rs).resource).attributes);
    for (const ss of arr(obj(rs).scopeSpans)) {
      const scopeName = String(obj(obj(ss).scope).name ?? '');
      for (const raw of arr(obj(ss).spans)) {
        const s = obj(raw);
        const parent = jsonId(s.parentSpanId, 16);
        const status = obj(s.status);
        spans.push({
          traceId: jsonId(s.traceId, 32),
          spanId: jsonId(s.spanId, 16),
          ...(parent === '' ? {} : { parentSpanId: parent }),
          name: String(s.name ?? ''),
          kind: KINDS[Number(s.kind ?? 0)] ?? 'unspecified',
          serviceName: String(resource['service.name'] ?? ''),
          scopeName,
          attributes: jsonKeyValues(s.attributes),
          resource,
          events: arr(s.events).map((e) => ({
            name: String(obj(e).name ?? ''),
            attributes: jsonKeyValues(obj(e).attributes),
          })),
          statusCode: Number(status.code ?? 0),
          ...(typeof status.message === 'string' && status.message !== '' ? { statusMessage: status.message } : {}),
          startTimeUnixNano: BigInt(String(s.startTimeUnixNano ?? 0)),
          endTimeUnixNano: BigInt(String(s.endTimeUnixNano ?? 0)),
        });
      }
    }
  }
  return spans;
}

// ---------------------------------------------------------------------------------------

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new Error('body too large');
    chunks.push(chunk as Buffer);
  }
  const raw = Buffer.concat(chunks);
  const encoding = req.headers['content-encoding']?.toLowerCase();
  if (encoding === 'gzip') return gunzipSync(raw);
  if (encoding === 'deflate') return inflateSync(raw);
  return raw;
}

function describe(spans: readonly ReceivedSpan[]): string {
  return spans.length === 0
    ? '(no spans)'
    : spans.map((s) => `${s.serviceName}:${s.name} ${s.traceId}/${s.spanId}<-${s.parentSpanId ?? '-'}`).join('\n');
}

/** Starts a receiver on 127.0.0.1 at a free port. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const requests: ReceivedRequest[] = [];
  const waiters = new Set<() => void>();

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'POST' || req.url?.split('?')[0] !== '/v1/traces') {
      res.writeHead(404).end();
      return;
    }
    const contentType = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
    const isJson = contentType === 'application/json';
    if (!isJson && contentType !== 'application/x-protobuf') {
      res.writeHead(415).end();
      return;
    }
    let received: ReceivedSpan[];
    try {
      const body = await readBody(req);
      received = isJson ? decodeJsonTraces(JSON.parse(body.toString('utf8'))) : decodeProtobufTraces(body);
    } catch (e) {
      res.writeHead(400, { 'content-type': 'text/plain' }).end(String(e));
      return;
    }
    spans.push(...received);
    requests.push({ contentType, contentEncoding: req.headers['content-encoding'], spans: received.length });
    // An empty ExportTraceServiceResponse means full success.
    if (isJson) res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    else res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    for (const wake of [...waiters]) wake();
  }

  const server = createServer(function otlpRequest(req, res) {
    handle(req, res).catch((e) => {
      if (!res.headersSent) res.writeHead(500).end(String(e));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;

  function waitFor(
    done: (s: readonly ReceivedSpan[]) => boolean,
    timeoutMs = 15_000,
  ): Promise<readonly ReceivedSpan[]> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (!done(spans)) return;
        clearTimeout(timer);
        waiters.delete(check);
        resolve([...spans]);
      };
      const timer = setTimeout(() => {
        waiters.delete(check);
        reject(new Error(`OTLP receiver: condition not met within ${timeoutMs} ms; received:\n${describe(spans)}`));
      }, timeoutMs);
      waiters.add(check);
      check();
    });
  }

  return {
    url,
    tracesUrl: `${url}/v1/traces`,
    spans,
    requests,
    waitFor,
    waitForNames: (names, timeoutMs) =>
      waitFor((s) => names.every((n) => s.some((span) => span.name === n)), timeoutMs),
    clear() {
      spans.length = 0;
      requests.length = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
