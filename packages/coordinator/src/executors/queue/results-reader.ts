import type { ExecOutcome } from '@tool-dispatch/shared';
import {
  type AskMessage,
  duplicateClient,
  parseResultsEntry,
  RESULTS_STREAM_TTL_MS,
  type RedisClient,
} from '@tool-dispatch/shared/redis';
import { settleWithin } from '../../support/settle.js';

const RESULTS_GROUP = 'coordinator';
const READ_COUNT = 200;
const READ_BLOCK_MS = 2_000;
const RETRY_MS = 200;
/** How often the results read so far are trimmed from the stream. */
const RESULTS_TRIM_MS = 1_000;

type StreamEntry = [id: string, fields: string[]];

export interface ResultsReaderOptions {
  /** The executor's connection (group set-up, trims); the reader blocks on a duplicate of it. */
  redis: RedisClient;
  /** This coordinator's results stream. */
  key: string;
  /** The consumer name in the stream's group (the coordinator id). */
  consumer: string;
  /** Each outcome read, by the call's id. */
  onOutcome(callId: string, outcome: ExecOutcome): void;
  /** Each question a running call asks (an MCP elicitation), by the call's id. */
  onAsk(callId: string, question: AskMessage): void;
  onError(error: Error): void;
}

/**
 * Reads one coordinator's results stream (DESIGN.md: the results queue), where workers report
 * each call's outcome: a blocking read loop on a connection of its own, in a consumer group.
 */
export class ResultsReader {
  private readonly reader: RedisClient;
  private readonly redis: RedisClient;
  private readonly key: string;
  private closed = false;
  private loop: Promise<void> | undefined;

  constructor(private readonly options: ResultsReaderOptions) {
    this.redis = options.redis;
    this.key = options.key;
    this.reader = duplicateClient(options.redis);
    this.reader.on('error', options.onError);
  }

  /** Creates the stream and its group (if missing) and starts reading. */
  async start(): Promise<void> {
    await this.ensureGroup();
    this.loop = this.readResults();
  }

  /** Stops reading: drops the blocking connection and waits (at most `boundMs`) for the loop to end. */
  async stop(boundMs: number): Promise<void> {
    this.closed = true;
    this.reader.disconnect();
    await settleWithin(this.loop ?? Promise.resolve(), boundMs);
  }

  private async ensureGroup(): Promise<void> {
    try {
      await this.redis.xgroup('CREATE', this.key, RESULTS_GROUP, '0', 'MKSTREAM');
    } catch (e) {
      if (!(e instanceof Error) || !e.message.includes('BUSYGROUP')) throw e;
    }
    await this.redis.pexpire(this.key, RESULTS_STREAM_TTL_MS);
  }

  /**
   * Reads this coordinator's results stream. NOACK: an entry read is handled at once, in this
   * process, so nothing waits in the group's pending list for an ack; what was read is trimmed
   * (XTRIM MINID) at most every RESULTS_TRIM_MS, one command instead of an ack and a delete per read.
   */
  private async readResults(): Promise<void> {
    let lastRead: string | undefined;
    let trimmedAt = 0;
    while (!this.closed) {
      try {
        const reply = (await this.reader.xreadgroup(
          'GROUP',
          RESULTS_GROUP,
          this.options.consumer,
          'COUNT',
          READ_COUNT,
          'BLOCK',
          READ_BLOCK_MS,
          'NOACK',
          'STREAMS',
          this.key,
          '>',
        )) as [string, StreamEntry[]][] | null;
        const entries = reply?.[0]?.[1] ?? [];
        for (const [, fields] of entries) this.onResult(fields);
        lastRead = entries.at(-1)?.[0] ?? lastRead;
        const now = Date.now();
        if (lastRead !== undefined && now - trimmedAt >= RESULTS_TRIM_MS) {
          trimmedAt = now;
          // Not waited for: the next read goes out at once (a lost trim is made good by the next).
          this.redis.xtrim(this.key, 'MINID', lastRead).catch(this.options.onError);
          lastRead = undefined;
        }
      } catch (e) {
        if (this.closed) return;
        // The stream (and its group) vanished: expired while idle, or Redis restarted empty.
        if (e instanceof Error && e.message.includes('NOGROUP')) await this.ensureGroup().catch(this.options.onError);
        else await sleep(RETRY_MS);
      }
    }
  }

  /** A results entry (`parseResultsEntry`): one or more outcomes, or a question. */
  private onResult(fields: string[]): void {
    for (const message of parseResultsEntry(fields)) {
      if (message.kind === 'ask') this.options.onAsk(message.callId, message.question);
      else this.options.onOutcome(message.callId, message.outcome);
    }
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
