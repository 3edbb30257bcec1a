/** (v1.3) How far an executor got with a call: started (`running`), or its outcome recorded (`done`). */
export type CallProgressState = 'running' | 'done';

/**
 * (v1.3) Where the executor's calls of a round are, for a running round's view
 * (`Dispatcher.getRound`), read where any coordinator can (distributed: the calls' outcome hashes).
 * Undefined for a call: not started, or never sent (answered by pass 1, parked, or still at the
 * gate or a limit).
 */
export interface CallProgress {
  /** `origin`: the coordinator whose namespace holds the calls' outcomes (the one that began the round). */
  progress(
    origin: string | undefined,
    round: string,
    callIndexes: readonly number[],
  ): Promise<(CallProgressState | undefined)[]>;
}
