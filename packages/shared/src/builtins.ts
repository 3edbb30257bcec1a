import type { ToolDefinition } from './tool.js';

/** DESIGN.md pass 2: the 18 built-ins tagged concurrent. */
export const CONCURRENT_BUILTINS = [
  'read_files',
  'find_files',
  'find_tools',
  'file_history',
  'chat_history',
  'error_history',
  'fetch_page',
  'search_web',
  'http_request',
  'download_file',
  'test_tool',
  'calculate',
  'subagents',
  'list_chatbot',
  'send_to_chatbot',
  'reasoning_guide',
  'html_template',
  'write_todo',
] as const;

/** Built-ins that always run alone, whatever a definition claims. */
export const ALWAYS_SERIAL = ['edit_file', 'run_command'] as const;

/** Prefixes of user tools that are concurrent only when their own definition says so. */
export const USER_TOOL_PREFIXES = ['api_', 'script_', 'ext_'] as const;

const obj = (properties: Record<string, unknown>, required: string[] = []) => ({
  type: 'object',
  properties,
  required,
  additionalProperties: false,
});

const url = { type: 'string', minLength: 1, maxLength: 8192, description: 'An http or https URL.' };
const headers = {
  type: 'object',
  additionalProperties: { type: 'string' },
  description: 'Request headers, name to value.',
};

/** Definitions of the built-ins with a handler shipped in the worker (API.md's table). */
export const SHIPPED_DEFINITIONS: readonly ToolDefinition[] = [
  {
    name: 'find_tools',
    description:
      'Find tools by a search query or exact names and return their full definitions (JSON schemas). ' +
      'After this, call a found tool through run_tool(name, args).',
    parameters: obj({
      query: {
        type: 'string',
        description: 'What you need done, in words; matched against tool names, descriptions and parameters.',
      },
      limit: {
        type: 'integer',
        minimum: 1,
        maximum: 20,
        description: 'How many of the best matches of the query to return (default 5).',
      },
      names: { type: 'array', items: { type: 'string' }, description: 'Exact tool names to fetch.' },
    }),
    concurrency: 'concurrent',
  },
  {
    name: 'run_tool',
    description: 'Call a tool by name with its args. Fetch the tool schema with find_tools first.',
    parameters: obj(
      {
        name: { type: 'string', description: 'The tool to call.' },
        args: { type: 'object', description: 'The arguments, matching the tool schema.' },
      },
      ['name'],
    ),
    concurrency: 'concurrent',
  },
  {
    name: 'read_files',
    description: 'Read text files from the session workspace. Paths are relative to the workspace.',
    parameters: obj(
      {
        paths: { type: 'array', items: { type: 'string', minLength: 1 }, minItems: 1, maxItems: 100 },
        offset: {
          type: 'integer',
          minimum: 1,
          maximum: 100_000_000,
          description: 'First line to read, from 1 (default 1); applies to every path.',
        },
        limit: {
          type: 'integer',
          minimum: 1,
          maximum: 100_000_000,
          description: 'How many lines to read (default all); applies to every path.',
        },
      },
      ['paths'],
    ),
    concurrency: 'concurrent',
  },
  {
    name: 'find_files',
    description: 'List workspace files matching a glob pattern such as "src/**/*.ts".',
    parameters: obj({ pattern: { type: 'string', minLength: 1 } }, ['pattern']),
    concurrency: 'concurrent',
  },
  {
    name: 'edit_file',
    description:
      'Write a whole file ({path, content}) or replace exactly one occurrence of `old` with `new` ({path, old, new}).',
    parameters: {
      type: 'object',
      properties: {
        path: { type: 'string', minLength: 1 },
        content: { type: 'string' },
        old: { type: 'string', minLength: 1 },
        new: { type: 'string' },
      },
      required: ['path'],
      additionalProperties: false,
      oneOf: [{ required: ['content'] }, { required: ['old', 'new'] }],
    },
    concurrency: 'serial',
    confirm: true,
  },
  {
    name: 'run_command',
    description:
      'Run a shell command (sh) in the session workspace. A non-zero exit is reported, not an error. ' +
      'Past timeoutMs the whole process group is killed.',
    parameters: obj(
      {
        command: { type: 'string', minLength: 1 },
        timeoutMs: { type: 'integer', minimum: 1, maximum: 3_600_000 },
      },
      ['command'],
    ),
    concurrency: 'serial',
    confirm: true,
  },
  {
    name: 'http_request',
    description: 'Make an HTTP request. GET requests run without approval; other methods need it.',
    parameters: obj(
      {
        url,
        method: { type: 'string', pattern: '^[A-Za-z]{1,16}$' },
        headers,
        body: { type: 'string' },
      },
      ['url'],
    ),
    concurrency: 'concurrent',
  },
  {
    name: 'fetch_page',
    description: 'Fetch a web page and return its readable text.',
    parameters: obj({ url }, ['url']),
    concurrency: 'concurrent',
  },
  {
    name: 'download_file',
    description:
      'Download a URL (GET, same network rules as http_request) into a workspace file, creating parent ' +
      'directories and replacing the file if it exists. Returns {path, bytes, contentType}. At most 64 MiB; ' +
      'a larger body or a status other than 2xx fails the call and writes nothing.',
    parameters: obj(
      {
        url,
        path: {
          type: 'string',
          minLength: 1,
          maxLength: 4096,
          description: 'Where to write the file, relative to the session workspace.',
        },
      },
      ['url', 'path'],
    ),
    concurrency: 'concurrent',
  },
  {
    name: 'search_web',
    description: 'Search the web and return titles, URLs and snippets.',
    parameters: obj({ query: { type: 'string', minLength: 1, maxLength: 2000 } }, ['query']),
    concurrency: 'concurrent',
  },
  {
    name: 'calculate',
    description: 'Evaluate an arithmetic expression such as "(2+3)*4" or "sqrt(2)^2".',
    parameters: obj({ expression: { type: 'string', minLength: 1, maxLength: 10_000 } }, ['expression']),
    concurrency: 'concurrent',
  },
  {
    name: 'write_todo',
    description: 'Replace the session to-do list.',
    parameters: obj(
      {
        items: {
          type: 'array',
          maxItems: 500,
          items: obj({ text: { type: 'string', minLength: 1 }, done: { type: 'boolean' } }, ['text']),
        },
      },
      ['items'],
    ),
    concurrency: 'concurrent',
  },
];

const limit = {
  type: 'integer',
  minimum: 1,
  maximum: 100,
  description: 'How many entries at most, newest first (default 20).',
};

/**
 * Built-ins the coordinator answers itself from what pass 3 recorded of the session (no worker
 * handler): its results, newest first. `find_tools` (answered from the catalog) is in SHIPPED_DEFINITIONS.
 */
export const COORDINATOR_DEFINITIONS: readonly ToolDefinition[] = [
  {
    name: 'file_history',
    description:
      'List what this session did to a workspace file, newest first: the recorded results of read_files, ' +
      'edit_file, find_files and download_file calls that named or found the path, and every run_command ' +
      '(flagged mayHaveTouched, since a command may touch any file). Returns {entries: [{round, run, at, id, name, status, ...}]}.',
    parameters: obj({ path: { type: 'string', minLength: 1, maxLength: 4096 }, limit }, ['path']),
    concurrency: 'concurrent',
  },
  {
    name: 'error_history',
    description:
      'List the calls of this session that did not succeed (every status but ok, deduped and cached), newest first, ' +
      'optionally of one tool. Returns {entries: [{round, run, at, id, name, status, error}]}.',
    parameters: obj({ tool: { type: 'string', minLength: 1, maxLength: 128 }, limit }),
    concurrency: 'concurrent',
  },
];

/** Built-ins DESIGN.md names whose handlers are not shipped: in the catalog, `unknown` until one registers. */
export const UNSHIPPED_DEFINITIONS: readonly ToolDefinition[] = [
  ['chat_history', 'Search earlier messages of this conversation.'],
  ['test_tool', 'A tool for testing the dispatcher.'],
  ['subagents', 'Run sub-agents on sub-tasks.'],
  ['list_chatbot', 'List the chatbots that can be messaged.'],
  ['send_to_chatbot', 'Send a message to a chatbot.'],
  ['reasoning_guide', 'Return a reasoning guide for a kind of task.'],
  ['html_template', 'Render an HTML template.'],
  ['generate_audio', 'Generate audio from text.'],
  ['generate_image', 'Generate an image from a prompt.'],
].map(([name, description]) => ({
  name: name as string,
  description: description as string,
  parameters: { type: 'object' },
  concurrency: (CONCURRENT_BUILTINS as readonly string[]).includes(name as string) ? 'concurrent' : 'serial',
}));

/**
 * Built-ins answered by a person through the inputs endpoints (API.md "Parked calls"): no worker
 * runs them; pass 2 parks each call until its answer is posted. Always serial, never deduped.
 */
export const INTERACTIVE_DEFINITIONS: readonly ToolDefinition[] = [
  {
    name: 'ask_user',
    description:
      'Ask the user a question and wait for the answer. With `choices`, the answer is one of them. ' +
      'Returns {answer}. Use it when you cannot go on without a decision or a fact only the user has.',
    parameters: obj(
      {
        question: {
          type: 'string',
          minLength: 1,
          maxLength: 10_000,
          description: 'The question, as the user reads it.',
        },
        choices: {
          type: 'array',
          items: { type: 'string', minLength: 1 },
          minItems: 1,
          maxItems: 100,
          description: 'The answers the user may pick from; without it, any answer.',
        },
      },
      ['question'],
    ),
    concurrency: 'serial',
    interactive: true,
  },
];

/** Cacheable tools (DESIGN.md pass 1 step 7); http_request only for GET without credentials. */
export const CACHEABLE_TOOLS = ['fetch_page', 'search_web', 'http_request'] as const;
