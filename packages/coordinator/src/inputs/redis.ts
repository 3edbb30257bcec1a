import { type RedisKeys, redisKeys, tryParseJson } from '@tool-dispatch/shared/redis';
import type { InputAnswer, InputSettlement, ParkedInput } from '../model.js';
import { parseSettlePendingReply, settlePendingScript } from '../support/lua/settlePending-2.lua.js';
import { getOrCreate } from '../support/maps.js';
import { duplicateClient, type RedisClient, runScript } from '../support/redis-client.js';
import { decodeParkedInput, decodeSettlement } from './codec.js';
import { byParkOrder, type FindInput, type InputHub, type InputWait, type ParkOutcome } from './input-hub.js';
import { answerInputScript, parseAnswerInputReply } from './lua/answerInput-2.lua.js';
import { ParkInputStatus, parkInputScript, parseParkInputReply } from './lua/parkInput-2.lua.js';

export interface RedisInputHubOptions {
  /** A connection the caller owns; the hub duplicates it once for its pub/sub subscription. */
  redis: RedisClient;
  /** TD_PREFIX. */
  prefix: string;
  /** How often a waiter re-reads the settlement, in case a pub/sub message was lost (default 1 s). */
  pollIntervalMs?: number;
}

/** How long a settlement stays readable: long enough for a coordinator taking the round over to find it. */
const SETTLED_TTL_MS = 60 * 60_000;
/** Pending entries outlive their deadline by this much, so a call whose coordinators all died does not stay forever. */
const PENDING_GRACE_MS = 60_000;

interface SettledMessage {
  inputId: string;
  settlement: InputSettlement;
}

/**
 * Parked calls shared by every coordinator, under the session's hash tag: entries in a pending
 * hash, settlements (answers, timeouts, cancellations) claimed atomically (Lua) into a settled
 * hash, told to the waiting coordinator over pub/sub, with a poll of the settled hash as the
 * safety net. A coordinator taking a round over parks its calls again under the same inputIds
 * and finds what was settled meanwhile.
 */
export class RedisInputHub implements InputHub {
  readonly shared = true;
  private readonly redis: RedisClient;
  private readonly keys: RedisKeys;
  private readonly pollIntervalMs: number;
  private readonly subscriber: RedisClient;
  private readonly subscribed: Promise<unknown>;
  private readonly waiters = new Map<string, Set<(w: InputWait) => void>>();

  constructor(options: RedisInputHubOptions) {
    this.redis = options.redis;
    this.keys = redisKeys(options.prefix);
    this.pollIntervalMs = options.pollIntervalMs ?? 1_000;
    this.subscriber = duplicateClient(this.redis);
    this.subscriber.on('error', () => {}); // reconnects and resubscribes on its own
    this.subscriber.on('message', (channel: string, message: string) => this.onMessage(channel, message));
    this.subscribed = this.subscriber.subscribe(this.keys.inputChannel());
    this.subscribed.catch(() => undefined);
  }

  async park(input: ParkedInput): Promise<ParkOutcome> {
    const ttl = Math.max(0, Math.ceil(input.deadline - Date.now())) + PENDING_GRACE_MS;
    const reply = parseParkInputReply(
      await runScript(this.redis, parkInputScript, this.hashes(input.session), [
        input.inputId,
        JSON.stringify(input),
        ttl,
      ]),
    );
    if (reply.status === ParkInputStatus.Settled) {
      const settlement = decodeSettlement(reply.value);
      if (!settlement) throw parkInputScript.unexpectedReply('a settlement JSON', reply.value);
      return { kind: 'settled', settlement };
    }
    const stored = decodeParkedInput(reply.value);
    if (!stored) throw parkInputScript.unexpectedReply('a parked input JSON', reply.value);
    return { kind: 'parked', input: stored, fresh: reply.status === ParkInputStatus.Fresh };
  }

  async wait(input: ParkedInput, options: { signal: AbortSignal; release?: AbortSignal }): Promise<InputWait> {
    await this.subscribed.catch(() => undefined);
    return new Promise<InputWait>((resolve) => this.watch(input, options, resolve));
  }

  /** One wait: the first of a settlement (message, poll), the deadline, the signal or the release ends it. */
  private watch(
    input: ParkedInput,
    options: { signal: AbortSignal; release?: AbortSignal | undefined },
    resolve: (w: InputWait) => void,
  ): void {
    const { signal, release } = options;
    const { session, inputId } = input;
    let done = false;
    const finish = (w: InputWait) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      clearInterval(poll);
      signal.removeEventListener('abort', onAbort);
      release?.removeEventListener('abort', onRelease);
      const set = this.waiters.get(inputId);
      set?.delete(finish);
      if (set?.size === 0) this.waiters.delete(inputId);
      resolve(w);
    };
    const settleAs = (s: InputSettlement) => {
      this.settle(session, [inputId], s).then(
        ([held]) => finish(held ?? s),
        // Redis unreachable: end it here so the round is not stuck; the entry expires on its own.
        () => finish(s),
      );
    };
    const readBack = () =>
      this.readSettled(session, inputId).then(
        (s) => s && finish(s),
        () => undefined,
      );
    const onAbort = () => settleAs({ by: 'cancelled' });
    const onRelease = () => finish({ by: 'released' });
    const timer = setTimeout(
      function inputTimedOut() {
        settleAs({ by: 'timeout' });
      },
      Math.max(0, input.deadline - Date.now()),
    );
    const poll = setInterval(readBack, this.pollIntervalMs);
    getOrCreate(this.waiters, inputId, () => new Set()).add(finish);
    if (signal.aborted) onAbort();
    else if (release?.aborted) onRelease();
    else {
      signal.addEventListener('abort', onAbort, { once: true });
      release?.addEventListener('abort', onRelease, { once: true });
      // Settled between park and now (an answer, with its message gone before we listened)?
      void readBack();
    }
  }

  async settle(session: string, inputIds: readonly string[], settlement: InputSettlement): Promise<InputSettlement[]> {
    if (inputIds.length === 0) return [];
    const json = JSON.stringify(settlement);
    const reply = parseSettlePendingReply(
      await runScript(this.redis, settlePendingScript, this.hashes(session), [json, SETTLED_TTL_MS, ...inputIds]),
    );
    return inputIds.map((_, i) => decodeSettlement(reply[i]) ?? settlement);
  }

  async find(session: string, idOrCallId: string): Promise<FindInput> {
    const now = Date.now();
    const byId = decodeParkedInput(await this.redis.hget(this.keys.inputPending(session), idOrCallId));
    if (byId && byId.deadline >= now) return { kind: 'found', input: byId };
    const byCall = (await this.pending(session)).filter((i) => i.callId === idOrCallId);
    if (byCall.length > 1) return { kind: 'ambiguous', count: byCall.length };
    const [only] = byCall;
    return only ? { kind: 'found', input: only } : { kind: 'not_found' };
  }

  async answer(session: string, inputId: string, answer: InputAnswer): Promise<'answered' | 'not_found'> {
    const settlement: InputSettlement = { by: 'answer', answer };
    const json = JSON.stringify(settlement);
    const args = [inputId, json, SETTLED_TTL_MS, Date.now()];
    const answered = parseAnswerInputReply(await runScript(this.redis, answerInputScript, this.hashes(session), args));
    if (!answered) return 'not_found';
    // Settled here at once when this coordinator waits for it; the others hear it over pub/sub.
    this.tell(inputId, settlement);
    const message: SettledMessage = { inputId, settlement };
    await this.redis.publish(this.keys.inputChannel(), JSON.stringify(message)).catch(() => undefined);
    return 'answered';
  }

  async pending(session: string): Promise<ParkedInput[]> {
    const now = Date.now();
    const values = await this.redis.hvals(this.keys.inputPending(session));
    return values
      .map((v) => decodeParkedInput(v))
      .filter((i): i is ParkedInput => i !== undefined && i.deadline >= now)
      .sort(byParkOrder);
  }

  /** Lets go of every wait (`released`): the calls stay parked for another coordinator. Drops the subscription. */
  async close(): Promise<void> {
    for (const set of [...this.waiters.values()]) for (const w of [...set]) w({ by: 'released' });
    this.subscriber.disconnect();
  }

  private hashes(session: string): string[] {
    return [this.keys.inputPending(session), this.keys.inputSettled(session)];
  }

  private async readSettled(session: string, inputId: string): Promise<InputSettlement | undefined> {
    return decodeSettlement(await this.redis.hget(this.keys.inputSettled(session), inputId));
  }

  private tell(inputId: string, settlement: InputSettlement): void {
    for (const w of [...(this.waiters.get(inputId) ?? [])]) w(settlement);
  }

  private onMessage(channel: string, message: string): void {
    if (channel !== this.keys.inputChannel()) return;
    const parsed = tryParseJson(message) as Partial<SettledMessage> | undefined;
    if (!parsed || typeof parsed.inputId !== 'string') return;
    const settlement = decodeSettlement(JSON.stringify(parsed.settlement));
    if (settlement) this.tell(parsed.inputId, settlement);
  }
}
