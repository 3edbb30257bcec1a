// What the OTEL_* environment asks for, resolved once.
import { ATTR_SERVICE_NAME } from './names.js';

export type OtlpProtocol = 'http/protobuf' | 'http/json';

/** What the OTEL_* environment asks for, resolved once. */
export interface TracingConfig {
  /** False when no OTLP endpoint is set, or OTEL_SDK_DISABLED / OTEL_TRACES_EXPORTER=none say so. */
  enabled: boolean;
  /** Full URL spans are POSTed to (…/v1/traces); undefined when disabled. */
  url: string | undefined;
  protocol: OtlpProtocol;
  serviceName: string;
  /** From OTEL_RESOURCE_ATTRIBUTES (service.name already folded into serviceName). */
  resourceAttributes: Record<string, string>;
}

function parseResourceAttributes(raw: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const pair of (raw ?? '').split(',')) {
    const at = pair.indexOf('=');
    if (at <= 0) continue;
    const key = pair.slice(0, at).trim();
    const value = pair.slice(at + 1).trim();
    try {
      out[decodeURIComponent(key)] = decodeURIComponent(value);
    } catch {
      out[key] = value; // not percent-encoded after all; keep it as written
    }
  }
  return out;
}

function resolveProtocol(env: NodeJS.ProcessEnv): OtlpProtocol {
  const raw = (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL || 'http/protobuf').trim();
  if (raw === 'http/protobuf' || raw === 'http/json') return raw;
  throw new Error(
    `OTEL_EXPORTER_OTLP_PROTOCOL ${JSON.stringify(raw)} is not supported: use http/protobuf (default) or http/json, on the OTLP/HTTP port (4318)`,
  );
}

function resolveUrl(env: NodeJS.ProcessEnv): string | undefined {
  const signal = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  // The signal-specific endpoint is used as written; the base one gets /v1/traces (OTLP exporter spec).
  const url = signal || (base ? `${base.replace(/\/+$/, '')}/v1/traces` : undefined);
  if (url === undefined) return undefined;
  if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) {
    throw new Error(`OTLP traces endpoint must be an http(s) URL, got ${JSON.stringify(url)}`);
  }
  return url;
}

/**
 * Reads the standard OTEL_* variables; `defaultServiceName` is used when neither OTEL_SERVICE_NAME
 * nor a resource attribute names the service. `initTracing` is the API; exported for its test. @internal
 */
export function resolveTracingConfig(defaultServiceName: string, env: NodeJS.ProcessEnv = process.env): TracingConfig {
  const resourceAttributes = parseResourceAttributes(env.OTEL_RESOURCE_ATTRIBUTES);
  const serviceName = env.OTEL_SERVICE_NAME?.trim() || resourceAttributes[ATTR_SERVICE_NAME] || defaultServiceName;
  delete resourceAttributes[ATTR_SERVICE_NAME];
  const protocol = resolveProtocol(env);
  const disabled =
    env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true' ||
    (env.OTEL_TRACES_EXPORTER ?? '')
      .split(',')
      .map((s) => s.trim())
      .includes('none');
  const url = disabled ? undefined : resolveUrl(env);
  return { enabled: url !== undefined, url, protocol, serviceName, resourceAttributes };
}
