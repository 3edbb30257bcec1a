import type { ExecOutcome, HandlerConfig, InputRequester, QueueClass } from '@tool-dispatch/shared';
import {
  ATTR_MESSAGING_DESTINATION_NAME,
  ATTR_MESSAGING_MESSAGE_ID,
  ATTR_MESSAGING_OPERATION_NAME,
  ATTR_MESSAGING_OPERATION_TYPE,
  ATTR_MESSAGING_SYSTEM,
  type Attributes,
  globalTracing,
  MESSAGING_SYSTEM_BULLMQ,
} from '@tool-dispatch/shared/tracing';
import { runJob } from '../execute-job.js';
import type { WorkerMetrics } from '../metrics.js';
import type { HandlerRegistry } from '../registry.js';
import type { Slots } from '../support/slots.js';
import type { QueuedCall, TakenCarrier } from './run-queued-job.js';

/** What running one queued call needs: a slot of its class, the handlers, and where its counts go. */
export interface RunCallContext {
  readonly id: string;
  readonly registry: HandlerRegistry;
  readonly config: HandlerConfig;
  readonly slots: Readonly<Record<QueueClass, Slots>>;
  readonly metrics: WorkerMetrics | undefined;
}

/**
 * Runs one call of a queued job once a slot of its class is free: `runJob` (its deadline, cancel
 * and output cap), counted in the metrics, its span marked as a message taken off a BullMQ queue.
 */
export async function runQueuedCall(
  context: RunCallContext,
  call: QueuedCall,
  carrier: TakenCarrier,
  requestInput: InputRequester,
): Promise<ExecOutcome> {
  const { job, stop } = call;
  const { slots, registry, config, id, metrics } = context;
  const spanAttributes = globalTracing() ? messagingAttributes(carrier.queueName, carrier.id) : undefined;
  const release = slots[job.queue].tryAcquire() ?? (await slots[job.queue].acquire());
  // The call's wait, from its job's enqueue (the coordinator's clock) to now (a slot of this worker free).
  const options = spanAttributes
    ? { spanAttributes, controller: stop, queuedAtMs: carrier.addedAtMs, requestInput }
    : { controller: stop, requestInput };
  try {
    const run = () => runJob(registry, job, stop.signal, config, id, options);
    return await (metrics ? metrics.track(job.queue, job.name, run) : run());
  } finally {
    release();
  }
}

/** Messaging semantic conventions on the execute span: the call came off a BullMQ queue. */
function messagingAttributes(queueName: string, carrierId: string): Attributes {
  return {
    [ATTR_MESSAGING_SYSTEM]: MESSAGING_SYSTEM_BULLMQ,
    [ATTR_MESSAGING_DESTINATION_NAME]: queueName,
    [ATTR_MESSAGING_OPERATION_TYPE]: 'process',
    [ATTR_MESSAGING_OPERATION_NAME]: 'process',
    [ATTR_MESSAGING_MESSAGE_ID]: carrierId,
  };
}
