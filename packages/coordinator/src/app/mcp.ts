import { loadMcpConfig, McpHub, type McpServerConfig } from '@tool-dispatch/worker';

/**
 * The MCP servers TD_MCP_CONFIG names (API.md), checked before anything starts: a bad file is a
 * ConfigError (the CLI exits 2 naming the problem). Keys the file has that this client ignores
 * are logged.
 */
export function mcpServersFrom(env: NodeJS.ProcessEnv, log: (line: string) => void): McpServerConfig[] {
  const file = env.TD_MCP_CONFIG;
  if (!file) return [];
  const { servers, warnings } = loadMcpConfig(file);
  for (const w of warnings) log(w);
  return servers;
}

/** A hub connecting to `servers` in the background (their tools join the catalog as each comes up); none without servers. */
export function startMcpHub(
  servers: readonly McpServerConfig[],
  log: (line: string) => void,
  version: string,
): McpHub | undefined {
  if (servers.length === 0) return undefined;
  const hub = new McpHub({ servers, log, clientInfo: { name: 'tool-dispatch', version } });
  log(
    `mcp: connecting to ${servers.length} server${servers.length === 1 ? '' : 's'} (${servers.map((s) => s.name).join(', ')})`,
  );
  hub.start().catch((e: unknown) => log(`mcp: ${e instanceof Error ? e.message : String(e)}`));
  return hub;
}
