import { Counter, Gauge, type Registry } from 'prom-client';
import type { McpHub } from './hub.js';

/**
 * The MCP metrics of a process with MCP servers, in `registry`: td_mcp_servers_up{server} (1 up,
 * 0 connecting or down; read at each scrape) and td_mcp_calls_total{server,tool,status} (the
 * tool by its name on the server; status ok, error, timeout or cancelled). Every configured
 * server shows from the first scrape.
 */
export function registerMcpMetrics(registry: Registry, hub: McpHub): void {
  new Gauge({
    name: 'td_mcp_servers_up',
    help: 'MCP servers of this process that are connected (1) or not (0: connecting, or down and reconnecting), by server.',
    labelNames: ['server'] as const,
    registers: [registry],
    collect() {
      for (const s of hub.status()) this.labels(s.server).set(s.state === 'up' ? 1 : 0);
    },
  });
  const calls = new Counter({
    name: 'td_mcp_calls_total',
    help: 'MCP tool calls this process made, by server, tool (its name on the server) and outcome (ok, error, timeout, cancelled).',
    labelNames: ['server', 'tool', 'status'] as const,
    registers: [registry],
  });
  hub.onCall((server, tool, status) => calls.labels(server, tool, status).inc());
}
