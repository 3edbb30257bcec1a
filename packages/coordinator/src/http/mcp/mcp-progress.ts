// A tools/call's progress notifications (API.md): where the call is, sent with the client's
// progressToken each time it moves on, and by the caller's timer in between. Shared by the 2025
// and the 2026 paths, which differ only in how a notification goes out.

/** Where the call is, for progress messages (API.md). */
export type Stage = 'queued' | 'running' | 'waiting for approval' | 'waiting for an answer';

/** A progress notification as the path sends it. */
export type SendProgress = (params: {
  progressToken: string | number;
  progress: number;
  message: Stage;
}) => Promise<unknown>;

export class CallProgressNotes {
  private stage: Stage = 'queued';
  private progress = 0;
  /** The client's progressToken; none: nothing is sent. */
  readonly token: string | number | undefined;

  constructor(
    meta: Record<string, unknown> | undefined,
    private readonly send: SendProgress,
  ) {
    const t = meta?.progressToken;
    this.token = typeof t === 'string' || typeof t === 'number' ? t : undefined;
  }

  /** The call moved on: said at once (nothing when it is where it was). */
  moveTo(stage: Stage): void {
    if (this.stage === stage) return;
    this.stage = stage;
    this.notify();
  }

  /** Where it is now, without saying so (a tick says it next). */
  setStage(stage: Stage): void {
    this.stage = stage;
  }

  notify(): void {
    if (this.token === undefined) return;
    this.progress += 1;
    this.send({ progressToken: this.token, progress: this.progress, message: this.stage }).catch(() => undefined);
  }
}
