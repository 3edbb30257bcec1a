/** A confirmation waiting for a person (API.md `GET .../confirmations`). */
export interface PendingConfirmation {
  confirmationId: string;
  session: string;
  round: string;
  run: string;
  callId: string;
  name: string;
  args: Record<string, unknown>;
  createdAt: number;
}

export interface ConfirmDecision {
  approve: boolean;
  remember: boolean;
  /** Who decided: a person, the confirm timeout, or the run's cancellation. */
  by: 'person' | 'timeout' | 'cancelled';
  /** (v1.2) The person's name: the token's, `mcp-client`, or `grant:<grantId>`. */
  who?: string;
  /** When the person answered (epoch ms). */
  at?: number;
}

/** (v1.2) A grant asked for with an approval: later calls it covers are approved without asking. */
export interface GrantRequest {
  scope: 'args' | 'tool';
  /** Only in the run of the call answered. */
  run?: true;
  ttlMs?: number;
}

/** A person's answer to a confirmation. */
export interface ConfirmAnswer {
  approve: boolean;
  remember: boolean;
  /** Who answered (a token's name, `mcp-client`); `person` when unknown. */
  who?: string;
  grant?: GrantRequest;
}

export type AnswerOutcome =
  | { kind: 'answered'; confirmation: PendingConfirmation }
  | { kind: 'not_found' }
  | { kind: 'ambiguous'; count: number };

/**
 * Where confirmations wait and get answered. The requester may live on another coordinator
 * than the one that receives the answer (Redis implementation), so everything is by id.
 */
export interface ConfirmHub {
  /**
   * Registers all of a round's confirmations at once and resolves when every one is decided:
   * answered, timed out after `timeoutMs` (denied), or the signal aborted (cancelled).
   */
  request(
    items: readonly PendingConfirmation[],
    options: { timeoutMs: number; signal: AbortSignal },
  ): Promise<ConfirmDecision[]>;
  /** Answers by confirmationId, or by a callId that exactly one pending confirmation has. */
  answer(session: string, idOrCallId: string, decision: ConfirmAnswer): Promise<AnswerOutcome>;
  pending(session: string): Promise<PendingConfirmation[]>;
  close(): Promise<void>;
}
