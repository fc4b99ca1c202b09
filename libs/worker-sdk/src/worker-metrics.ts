import { counter, createRegistry, gauge, gaugeReadAtScrape, histogram } from '@sched/metrics';
import { PRIORITY_CLASSES } from './fair-slots.js';

/** Every metric a worker exports. */
export function createWorkerMetrics(workerId: string) {
  const registry = createRegistry({ component: 'worker', worker: workerId });
  let waitingSource: () => readonly number[] = () => [0, 0, 0];
  gauge(
    registry,
    'sched_worker_waiting_for_slot',
    'fetched executions waiting for an execution slot, by priority class (read at scrape)',
    ['class'],
    (g) => {
      const w = waitingSource();
      PRIORITY_CLASSES.forEach((c, i) => g.set({ class: c }, w[i] ?? 0));
    },
  );
  return {
    registry,
    /** Where `sched_worker_waiting_for_slot` reads its values, per class `[high, normal, low]`. */
    waitingForSlot: {
      setSource(source: () => readonly number[]): void {
        waitingSource = source;
      },
    },
    tenantCapped: counter(
      registry,
      'sched_worker_tenant_capped_total',
      'executions that waited because their tenant held its cap of slots (tenantConcurrency)',
      ['tenant'],
    ),
    abandoned: counter(
      registry,
      'sched_worker_handlers_abandoned_total',
      'handlers still running abandonAfterTimeoutMs past their execution timeout: their slot was given back and their result ignored',
      ['queue'],
    ),
    abandonedRunning: gauge(
      registry,
      'sched_worker_handlers_abandoned_running',
      'abandoned handlers that have not returned yet',
    ),
    rateLimited: counter(
      registry,
      'sched_worker_rate_limited_total',
      "executions that waited for their queue's start rate (ratePerSec)",
      ['queue'],
    ),
    consumerRestarts: gaugeReadAtScrape(
      registry,
      'sched_worker_consumer_restarts',
      'times the dispatch consumer was started again after an error its Kafka client does not retry (read at scrape)',
    ),
    queueWait: histogram(
      registry,
      'sched_worker_queue_wait_seconds',
      'claim (dispatch) → handler start, seconds',
      undefined,
      ['queue'],
    ),
    execution: histogram(registry, 'sched_worker_execution_seconds', 'handler duration, seconds', undefined, [
      'queue',
      'outcome',
    ]),
    started: counter(registry, 'sched_worker_started_total', 'attempts started', ['queue']),
    refusedStart: counter(
      registry,
      'sched_worker_refused_start_total',
      'dispatches refused at start (cancelled, rescheduled, stale attempt)',
      ['queue'],
    ),
    startNotYetVisible: counter(
      registry,
      'sched_worker_start_not_yet_visible_total',
      'starts retried because the dispatching transaction was not visible yet when its record arrived',
      ['queue'],
    ),
    duplicates: counter(
      registry,
      'sched_worker_duplicate_deliveries_total',
      'dispatch records seen again (event id)',
      ['queue'],
    ),
    retries: counter(
      registry,
      'sched_worker_retries_total',
      'failed attempts scheduled for retry, by class',
      ['queue', 'class'],
    ),
    deadLettered: counter(registry, 'sched_dlq_ingress_total', 'jobs dead-lettered', ['queue', 'class']),
    dueToSuccess: histogram(
      registry,
      'sched_worker_due_to_success_seconds',
      "a job's due time → its success committed, per queue: the whole way (firing, relay, queueing, handler), seconds",
      [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600],
      ['queue'],
    ),
    leaseLost: counter(
      registry,
      'sched_worker_lease_expired_total',
      'leases lost while running (reclaimed or cancelled)',
      ['queue'],
    ),
    refusedCompletion: counter(
      registry,
      'sched_worker_refused_completions_total',
      'late completions refused by the lease fence',
      ['queue'],
    ),
    undecodable: counter(
      registry,
      'sched_worker_undecodable_total',
      'dispatch records that could not be decoded',
      ['topic'],
    ),
  };
}

export type WorkerMetrics = ReturnType<typeof createWorkerMetrics>;
