/**
 * Redis key names, all under TD_PREFIX. Keys of one session share the `{s:<session>}` hash tag
 * (one Redis Cluster slot, so pipelines and Lua over them work on a cluster); the result cache
 * is tenant-scoped under `{t:<tenant>}`; worker liveness lives under `{w}`. A coordinator's
 * results stream, and the outcome hashes and cancel marks of the calls it enqueued, share
 * `{c:<coordinator>}`, so a worker records an outcome and sends it in one script. Ids never
 * contain braces (ID_PATTERN), so the first `{…}` of a key is always its hash tag.
 */
export interface RedisKeys {
  readonly prefix: string;
  /** Hash: the session's state (`state` JSON) plus `f:<tool>`/`a:<tool>` fields for fetched / auto-approved. */
  session(session: string): string;
  /** (v1.2) Hash: the session's grants, grantId → grant JSON, in the session's slot. */
  grants(session: string): string;
  /** List of every recorded result (JSON), oldest first. */
  history(session: string): string;
  /** List of one tool's recorded results (JSON), oldest first. */
  toolHistory(session: string, tool: string): string;
  /** Hash: dedupe key → DedupeEntry JSON, for one run. */
  dedupe(session: string, run: string): string;
  /** Hash: dedupe key → `{tool, paths}` JSON, so invalidation never decodes outputs. */
  dedupeMeta(session: string, run: string): string;
  /** Hash: a round's record (`record`, `state`, `response`). */
  round(session: string, run: string, round: string): string;
  /** String: `<round>|<callsHash>` claimed by an idempotency key in a run. */
  idempotency(session: string, run: string, key: string): string;
  /** Stream: the session's events, trimmed to the replay window. */
  events(session: string): string;
  /** Hash: confirmationId → PendingConfirmation JSON, for those waiting. */
  confirmPending(session: string): string;
  /** Hash: confirmationId → Decision JSON, for those decided (read by a requester that missed the message). */
  confirmDecided(session: string): string;
  /** Hash: inputId → ParkedInput JSON, for the parked calls waiting for an answer. */
  inputPending(session: string): string;
  /** Hash: inputId → settlement JSON (an answer, a timeout, a cancellation), read by whoever waits or parks it again. */
  inputSettled(session: string): string;
  /**
   * (v1.3) Hash: the outcomes of one round's calls, one field per call (its call index, see
   * `outcomeSlot`): a call's ExecOutcome JSON, written once by the worker that ran it (or reported
   * it lost); `RUNNING_MARK <BullMQ job id>` while that job runs it. Under the coordinator that
   * first enqueued the round (ExecJob.origin); round ids are unique. One hash a round, not one key a
   * call: marking, recording and shortening a round's calls is a command or two, not one each.
   */
  outcomes(origin: string, round: string): string;
  /**
   * String: a call's outcome or running mark as workers and coordinators before v1.3 kept it (one
   * key a call). Only read, by a worker's startCalls, while such keys may live (a day after an
   * upgrade), so a call an older worker ran or runs is not run again.
   */
  legacyOutcome(origin: string, callId: string): string;
  /** String: present when the coordinator cancelled the call, checked by a worker before it starts it; beside its round's outcome hash. */
  cancel(origin: string, callId: string): string;
  /** String: a cached result, tenant-scoped. */
  cache(tenant: string, key: string): string;
  /** Stream (consumer group): outcomes for one coordinator's pending calls; each entry one or more `job`, `outcome` field pairs. */
  results(coordinatorId: string): string;
  /** Sorted set: worker id scored by the epoch ms its liveness expires. */
  workersAlive(): string;
  /** String: a worker's announcement (`WorkerAnnouncement` JSON), with a TTL. */
  worker(workerId: string): string;
  /** String: the `DeploymentRecord` JSON (TD_QUEUE_SHARDS), written by coordinators, compared by every process. */
  deployment(): string;
  /** Pub/sub channel: `CancelMessage` JSON to every worker. */
  cancelChannel(): string;
  /** Pub/sub channel: confirmation decisions to every coordinator. */
  confirmChannel(): string;
  /** Pub/sub channel: settlements of parked calls to every coordinator. */
  inputChannel(): string;
  /**
   * String: the answer (`InputReply` JSON) to the `n`th question a running call asked (an MCP
   * elicitation), written by the coordinator that parked it; beside the call's outcome hash.
   */
  answer(origin: string, callId: string, n: number): string;
  /** Pub/sub channel: `AnswerMessage` JSON to every worker (the answer key is the fallback). */
  answerChannel(): string;
  /**
   * The base of a named limit's keys in its scope's slot (`tag`: `s:<session>`, `t:<tenant>`):
   * `:held` (ZSET ticket → lease end), `:wait` (ZSET ticket → arrival), `:wexp` (ZSET ticket →
   * waiter lease end), `:seq` (arrival counter).
   */
  limit(tag: string, name: string): string;
  /** Pub/sub channel: the base of a limit with a free place and waiters, to every coordinator. */
  limitChannel(): string;
  /** Sorted set: sessions with a confirmation or parked call asked, scored by the epoch ms its wait ends (the inbox's index). */
  inboxSessions(): string;
  /** Pub/sub channel: `InboxChange` JSON (asked, gone) to every coordinator's inbox. */
  inboxChannel(): string;
}

/** Key names for one deployment prefix (TD_PREFIX). */
export function redisKeys(prefix: string): RedisKeys {
  const s = (session: string) => `${prefix}:{s:${session}}`;
  const c = (coordinatorId: string) => `${prefix}:{c:${coordinatorId}}`;
  return {
    prefix,
    session: (session) => `${s(session)}:session`,
    grants: (session) => `${s(session)}:grants`,
    history: (session) => `${s(session)}:history`,
    toolHistory: (session, tool) => `${s(session)}:hist:${tool}`,
    dedupe: (session, run) => `${s(session)}:dedupe:${run}`,
    dedupeMeta: (session, run) => `${s(session)}:dedupe-meta:${run}`,
    round: (session, run, round) => `${s(session)}:round:${run}:${round}`,
    idempotency: (session, run, key) => `${s(session)}:idem:${run}:${key}`,
    events: (session) => `${s(session)}:events`,
    confirmPending: (session) => `${s(session)}:confirm:pending`,
    confirmDecided: (session) => `${s(session)}:confirm:decided`,
    inputPending: (session) => `${s(session)}:input:pending`,
    inputSettled: (session) => `${s(session)}:input:settled`,
    outcomes: (origin, round) => `${c(origin)}:outcomes:${round}`,
    legacyOutcome: (origin, callId) => `${c(origin)}:outcome:${callId}`,
    cancel: (origin, callId) => `${c(origin)}:cancel:${callId}`,
    cache: (tenant, key) => `${prefix}:{t:${tenant}}:cache:${key}`,
    results: (coordinatorId) => `${c(coordinatorId)}:results`,
    workersAlive: () => `${prefix}:{w}:alive`,
    worker: (workerId) => `${prefix}:{w}:worker:${workerId}`,
    deployment: () => `${prefix}:{w}:deployment`,
    cancelChannel: () => `${prefix}:cancel`,
    confirmChannel: () => `${prefix}:confirm`,
    inputChannel: () => `${prefix}:input`,
    answer: (origin, callId, n) => `${c(origin)}:answer:${callId}:${n}`,
    answerChannel: () => `${prefix}:answer`,
    limit: (tag, name) => `${prefix}:{${tag}}:limit:${name}`,
    limitChannel: () => `${prefix}:limit`,
    inboxSessions: () => `${prefix}:{inbox}:sessions`,
    inboxChannel: () => `${prefix}:inbox`,
  };
}

/** Default sliding TTL of session-scoped state (sessions, histories, dedupe maps, rounds), refreshed on write (TD_SESSION_TTL_MS). */
export { DEFAULT_SESSION_TTL_MS as SESSION_TTL_MS } from './config.js';
