import {
  type CallResult,
  callKey,
  FAILURES,
  type FailureKind,
  type ToolSpec,
  validateAgainst,
} from '@tool-dispatch/shared';
import type {
  CachedResult,
  CallDecision,
  DedupeEntry,
  DedupeInvalidation,
  KnownKey,
  NormalCall,
  PlannedCall,
  RoundHooks,
} from '../model.js';
import { isCacheable, needsConfirmation } from './cache.js';
import { definitionOf } from './catalog.js';
import { covers, invalidationsOf, isDedupable, pathsRead } from './dedupe.js';
import { findTools } from './find-tools.js';
import { HISTORY_TOOLS } from './history-query.js';
import { argsShapeProblem, otherItemMessage, readArgs } from './normalize-call.js';
import { parkKindOf } from './park.js';

/** Tools the coordinator answers itself (no worker handler): from the catalog, or from the session's recorded history. */
export const COORDINATOR_TOOLS: ReadonlySet<string> = new Set(['find_tools', ...HISTORY_TOOLS]);

/** What pass 1 reads: the session's view of tools and the run's stored state. */
export interface PreflightInput {
  provider: string;
  loaded: ReadonlySet<string>;
  /** Mutated: schemas fetched by earlier calls of the round are fetched for later ones. */
  fetched: Set<string>;
  /**
   * Mutated: the names only a find_tools call of the round fetched. They are the session's only
   * once that call's result is committed (`fetchedByFindTools`): one that never ran fetches nothing.
   */
  foundByFindTools?: Set<string>;
  specs: ReadonlyMap<string, ToolSpec>;
  /** Tools with a registered handler (workers); never client tools, which the client runs. */
  runnable: ReadonlySet<string>;
  /**
   * No worker is announced at all (distributed mode, after the round's patience): the workers'
   * registry is empty, lost with a Redis primary, say. A tool the catalog knows then ends
   * `error`/`unavailable`, never `unknown` (API.md v1.2 "Known tools stay known").
   */
  noWorkers?: boolean;
  autoApprove: readonly string[] | 'all';
  /** Keys worked out ahead of pass 1 (`lookupKeys`), reused where a call resolves the same way. */
  knownKeys?: ReadonlyMap<NormalCall, KnownKey>;
  /** The run's dedupe entries under these keys (one read for the round). */
  findDedupe(keys: readonly string[]): Promise<ReadonlyMap<string, DedupeEntry>>;
  /** The tenant's live cached results under these keys (one read for the round). */
  findCached(keys: readonly string[]): Promise<ReadonlyMap<string, CachedResult>>;
  /** Wraps the answer of a find_tools call (tracing). */
  observeFindTools?: RoundHooks['findTools'];
}

/**
 * The keys of the calls pass 1 may look up in the run's dedupe map, worked out before the
 * session is read so the round's begin reads them in the same step: each call resolved as
 * steps 1 and 2 do with run_tool unwrapped, kept where `dedupable` says it may be deduped. A
 * call pass 1 resolves otherwise (run_tool under claude-code, say) gets its key there, and pass
 * 1 reads any key not read here itself.
 */
export function lookupKeys(
  calls: readonly NormalCall[],
  dedupable: (name: string, args: Record<string, unknown>) => boolean,
): Map<NormalCall, KnownKey> {
  const known = new Map<NormalCall, KnownKey>();
  for (const call of calls) {
    let { name, args } = call;
    if (!args || name === '') continue;
    if (name === 'run_tool') {
      const inner = args.name;
      if (typeof inner !== 'string' || inner === '' || inner === 'run_tool') continue;
      const read = readArgs(args.args);
      if ('problem' in read) continue;
      name = inner;
      args = read.args;
    }
    if (dedupable(name, args)) known.set(call, { name, args, key: callKey(name, args) });
  }
  return known;
}

const stop = (call: NormalCall, name: string, kind: FailureKind, message: string, details?: unknown): CallDecision => {
  const { status, code } = FAILURES[kind];
  const error = details === undefined ? { code, message } : { code, message, details };
  return { kind: 'done', result: { id: call.id, name, status, error, durationMs: 0 } };
};

function refusalHint(name: string, loaded: ReadonlySet<string>): string {
  const label = name ? `"${name}"` : 'A call without a tool name';
  if (loaded.has('run_tool')) {
    return `${label} is not loaded in this session, so it cannot be called directly. Fetch its schema with find_tools({"names": ["${name}"]}), then call it through run_tool({"name": "${name}", "args": {...}}).`;
  }
  return `${label} is not a tool you can call in this session. Use find_tools to see which tools exist and fetch their schemas.`;
}

/**
 * Pass 1 (DESIGN.md): goes through the calls in order, each through the eight steps, and
 * decides for each: ended here (with a status), follows an identical earlier call, or runs.
 */
export async function preflight(calls: readonly NormalCall[], input: PreflightInput): Promise<PlannedCall[]> {
  const resolved = calls.map((call) => resolveCall(call, input));
  // Pass 1 writes nothing to the dedupe map or the cache, so the round's lookups can all be read
  // first, at once. A cache hit is still used only at step 7 (valid calls of tools that exist).
  const open = resolved.filter((p) => p.decision.kind === 'run');
  const [dedupeHits, cacheHits] = await Promise.all([
    input.findDedupe([...new Set(open.filter((p) => p.dedupable).map((p) => p.key))]),
    input.findCached([...new Set(open.filter((p) => p.cacheable).map((p) => p.key))]),
  ]);
  const planned: PlannedCall[] = [];
  const leaders = new Map<string, number>();
  /** Invalidations earlier calls of this round will cause if they run (lookahead for dedupe). */
  const shadows: DedupeInvalidation[] = [];
  for (const r of resolved) {
    const p = r.decision.kind === 'run' ? decide(r, input, { leaders, shadows, planned, dedupeHits, cacheHits }) : r;
    planned.push(p);
    if (p.decision.kind === 'run') {
      for (const inv of invalidationsOf(p.name, p.args, undefined)) {
        shadows.push(inv);
        for (const [key, idx] of leaders) {
          const leader = planned[idx];
          if (leader && covers(inv, leader.name, leader.paths)) leaders.delete(key);
        }
      }
    }
  }
  return planned;
}

interface RoundState {
  leaders: Map<string, number>;
  shadows: DedupeInvalidation[];
  planned: PlannedCall[];
  dedupeHits: ReadonlyMap<string, DedupeEntry>;
  cacheHits: ReadonlyMap<string, CachedResult>;
}

/** Steps 1 and 2 (and the shape of the args): the call ended here, or its resolved name and args, to go on. */
function resolveCall(call: NormalCall, input: PreflightInput): PlannedCall {
  const base = (name: string, args: Record<string, unknown>, decision: CallDecision): PlannedCall => {
    const spec = input.specs.get(name);
    const known = input.knownKeys?.get(call);
    return {
      call,
      name,
      args,
      spec,
      key: known && known.name === name && known.args === args ? known.key : callKey(name, args),
      dedupable: isDedupable(spec, name, args),
      cacheable: isCacheable(spec, name, args),
      paths: pathsRead(name, args),
      decision,
    };
  };
  const unreadable = (name: string, problem: string) =>
    withUnreadableArgs(base(name, {}, { kind: 'run', needsConfirm: false }), problem);
  let name = call.name;
  let args = call.args;
  let viaRunTool = false;

  if (call.other) return base(name, {}, stop(call, name, 'not_a_function_call', otherItemMessage(call, call.other)));
  if (name === '')
    return base(
      name,
      args ?? {},
      stop(call, name, 'bad_args', 'The call has no tool name; every call needs a string "name".'),
    );

  // Step 1: unwrap run_tool (only where it is loaded; under claude-code step 2 refuses it).
  if (name === 'run_tool' && input.loaded.has('run_tool')) {
    if (!args) return base(name, {}, stop(call, name, 'bad_args', `run_tool: ${call.argsProblem}`));
    const inner = args.name;
    if (typeof inner !== 'string' || inner === '')
      return base(
        name,
        args,
        stop(call, name, 'bad_run_tool', 'run_tool needs a string "name" naming the tool to call, and its "args".'),
      );
    if (inner === 'run_tool')
      return base(name, args, stop(call, name, 'bad_run_tool', 'run_tool cannot call run_tool; name the tool itself.'));
    const read = readArgs(args.args);
    name = inner;
    if ('problem' in read) return unreadable(name, read.problem);
    args = read.args;
    viaRunTool = true;
  }

  // Step 2: the loaded-set check, for direct calls (names that exist nowhere too).
  if (!viaRunTool && !input.loaded.has(name))
    return base(name, args ?? {}, stop(call, name, 'not_loaded', refusalHint(name, input.loaded)));
  if (!args) return unreadable(name, call.argsProblem ?? 'args are missing');
  const shape = argsShapeProblem(args);
  if (shape) return base(name, {}, stop(call, name, 'bad_args', `${name}: ${shape}`));

  return base(name, args, { kind: 'run', needsConfirm: false });
}

/**
 * A call whose args are not a JSON object goes on to steps 3 to 6 (never deduped): an unfetched
 * tool's schema answer names the problem (step 4), a name with no definition is unknown (step 5),
 * and step 6 ends the call invalid.
 */
function withUnreadableArgs(planned: PlannedCall, problem: string): PlannedCall {
  return { ...planned, dedupable: false, cacheable: false, argsProblem: problem };
}

/** One of steps 3 to 8: the call's decision when the step ends it (or lets it run), undefined to go on. */
type Step = (planned: PlannedCall, input: PreflightInput, round: RoundState) => CallDecision | undefined;
/** A step after step 5, for a tool that exists: its spec at hand. */
type KnownStep = (
  planned: PlannedCall,
  spec: ToolSpec,
  input: PreflightInput,
  round: RoundState,
) => CallDecision | undefined;

/** Steps 3 to 8 for a call that got through steps 1 and 2, in DESIGN.md's order. */
function decide(planned: PlannedCall, input: PreflightInput, round: RoundState): PlannedCall {
  for (const step of [dedupeStep, schemaStep, existenceStep]) {
    const decision = step(planned, input, round);
    if (decision) return { ...planned, decision };
  }
  const spec = planned.spec;
  if (!spec) throw new Error(`preflight: ${planned.name} passed step 5 without a definition`);
  for (const step of [unreadableArgsStep, validationStep, cacheStep, findToolsStep]) {
    const decision = step(planned, spec, input, round);
    if (decision) return { ...planned, decision };
  }
  return { ...planned, decision: confirmStep(planned, spec, input) };
}

/** Step 3: dedupe, within the round (follow the first) and against the run's successful results. */
const dedupeStep: Step = (planned, _input, round) => {
  if (!planned.dedupable) return undefined;
  const leader = round.leaders.get(planned.key);
  if (leader !== undefined) return { kind: 'follow', leader };
  round.leaders.set(planned.key, round.planned.length);
  const shadowed = round.shadows.some((inv) => covers(inv, planned.name, planned.paths));
  const hit = shadowed ? undefined : round.dedupeHits.get(planned.key);
  if (!hit) return undefined;
  const result: CallResult = {
    id: planned.call.id,
    name: planned.name,
    status: 'deduped',
    output: hit.output,
    dedupedFrom: hit.callId,
    dedupedFromRound: hit.round,
    durationMs: 0,
  };
  return { kind: 'done', result };
};

/** Step 4: a deferred schema not yet shown to this session: shown now, with what is wrong with the args sent. */
const schemaStep: Step = ({ call, name, args, spec, argsProblem }, input) => {
  // A tool nothing can run has, for the model, no definition: step 5 answers it unknown at once.
  if (!spec || input.fetched.has(name) || !canRunHere(spec, input)) return undefined;
  input.fetched.add(name);
  const check =
    argsProblem === undefined ? validateAgainst(spec.parameters, args) : { valid: false, problems: [argsProblem] };
  const output: Record<string, unknown> = {
    tool: definitionOf(spec),
    message: `This is the schema of ${name}; it was not fetched before, so the call did not run. Call ${name} again with args that match tool.parameters.`,
  };
  if (!check.valid) output.problems = check.problems;
  return { kind: 'done', result: { id: call.id, name, status: 'schema', output, durationMs: 0 } };
};

/** Step 5: existence: a definition, and a handler somewhere (a person or the client, for a parked call). */
const existenceStep: Step = ({ call, name, spec }, input) => {
  if (!spec)
    return stop(
      call,
      name,
      'no_definition',
      `There is no tool named "${name}". Use find_tools to search for the tool you need.`,
    );
  // Parked in pass 2 (API.md "Parked calls"): its answer comes through the inputs endpoints.
  if (parkKindOf(spec)) return undefined;
  if (!canRunHere(spec, input) && input.noWorkers)
    return stop(
      call,
      name,
      'no_workers',
      `"${name}" did not run: no worker is available right now (their registry in Redis is empty, as after a failover). Try again in a moment.`,
    );
  if (!canRunHere(spec, input))
    return stop(
      call,
      name,
      'no_handler',
      `There is no tool named "${name}" that can run here (no handler is registered for it). Use find_tools to search for the tool you need.`,
    );
  return undefined;
};

/** A tool something can run: a handler, the coordinator, or (parked) its client or a person. */
const canRunHere = (spec: ToolSpec, input: PreflightInput) =>
  COORDINATOR_TOOLS.has(spec.name) || input.runnable.has(spec.name) || parkKindOf(spec) !== undefined;

/** Step 6, first: args that are not a JSON object (not JSON at all, an array, a string…). */
const unreadableArgsStep: KnownStep = ({ call, name, argsProblem }) =>
  argsProblem === undefined ? undefined : stop(call, name, 'bad_args', `${name}: ${argsProblem}`);

/** Step 6: validation against the tool's JSON schema, the errors in words. */
const validationStep: KnownStep = ({ call, name, args }, spec) => {
  const check = validateAgainst(spec.parameters, args);
  if (check.valid) return undefined;
  return stop(call, name, 'bad_args', `Invalid args for ${name}: ${check.problems.join('; ')}.`, {
    problems: check.problems,
  });
};

/** Step 7: the result cache (valid calls of existing tools only). */
const cacheStep: KnownStep = (planned, _spec, _input, round) => {
  const hit = planned.cacheable ? round.cacheHits.get(planned.key) : undefined;
  if (!hit) return undefined;
  return {
    kind: 'done',
    result: { id: planned.call.id, name: planned.name, status: 'cached', output: hit.output, durationMs: 0 },
  };
};

/** find_tools is answered here, so later calls of the round see the schemas it fetches. */
const findToolsStep: KnownStep = (planned, _spec, input) => {
  if (planned.name !== 'find_tools') return undefined;
  // With no worker announced at all (the registry lost), every tool the catalog knows stays findable.
  const visible = [...input.specs.values()].filter(
    (s) =>
      COORDINATOR_TOOLS.has(s.name) ||
      input.runnable.has(s.name) ||
      parkKindOf(s) !== undefined ||
      (input.noWorkers === true && s.kind !== 'client'),
  );
  const answer = () => findTools(visible, planned.args);
  const output = input.observeFindTools ? input.observeFindTools(planned, answer) : answer();
  for (const t of output.tools) {
    if (!input.fetched.has(t.name)) input.foundByFindTools?.add(t.name);
    input.fetched.add(t.name);
  }
  return { kind: 'run', needsConfirm: false, output };
};

/** Step 8: the confirm gate (asked for all of the round at once, by the gate pass), unless auto-approved. */
function confirmStep({ name, args }: PlannedCall, spec: ToolSpec, input: PreflightInput): CallDecision {
  if (!needsConfirmation(spec, name, args)) return { kind: 'run', needsConfirm: false };
  const approved = input.autoApprove === 'all' || input.autoApprove.includes(name);
  if (!approved) return { kind: 'run', needsConfirm: true };
  return { kind: 'run', needsConfirm: false, approval: { by: 'auto', at: new Date().toISOString() } };
}
