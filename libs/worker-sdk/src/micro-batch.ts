/**
 * Coalesces single requests into batched calls: `submit` queues one item and resolves with its own
 * result; items submitted while earlier batches are in flight (or within the same event-loop turn)
 * go out together in one `flush` call of at most `maxBatch` items, with at most `maxInFlight` calls
 * outstanding. Latency for a lone item is one event-loop turn; under load, one database round trip
 * (and one commit) serves a whole batch. With `lingerMs` > 0 a lone item waits that long for
 * company instead (a full batch still goes at once): for writes nobody waits on, such as
 * completions, where a trickle of one-job commits would cost a round trip and a WAL flush each.
 */
export class MicroBatcher<I, O> {
  private queue: { item: I; resolve: (o: O) => void; reject: (e: unknown) => void }[] = [];
  private inFlight = 0;
  private scheduled = false;

  constructor(
    private readonly flush: (items: I[]) => Promise<O[]>,
    private readonly maxBatch: number,
    private readonly maxInFlight: number,
    private readonly lingerMs = 0,
  ) {}

  /** Items waiting for a batch (for metrics and tests). */
  get waiting(): number {
    return this.queue.length;
  }

  submit(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.queue.push({ item, resolve, reject });
      if (this.lingerMs > 0 && this.queue.length >= this.maxBatch) this.pump();
      else if (!this.scheduled) this.schedule();
    });
  }

  private schedule(): void {
    this.scheduled = true;
    const go = () => {
      this.scheduled = false;
      this.pump();
    };
    if (this.lingerMs > 0) setTimeout(go, this.lingerMs);
    else setImmediate(go);
  }

  private pump(): void {
    while (this.inFlight < this.maxInFlight && this.queue.length > 0) {
      const batch = this.queue.splice(0, this.maxBatch);
      this.inFlight++;
      this.flush(batch.map((b) => b.item))
        .then(
          (results) => {
            if (results.length !== batch.length) {
              const err = new Error(
                `batch flush returned ${results.length} results for ${batch.length} items`,
              );
              for (const b of batch) b.reject(err);
            } else {
              batch.forEach((b, i) => b.resolve(results[i]!));
            }
          },
          (err: unknown) => {
            for (const b of batch) b.reject(err);
          },
        )
        .finally(() => {
          this.inFlight--;
          // Lingering: what is queued goes now only if its wait is over (no timer pending) or it
          // fills a batch; otherwise the pending timer sends it.
          if (this.lingerMs === 0 || !this.scheduled || this.queue.length >= this.maxBatch) this.pump();
        });
    }
  }
}

/** Runs `fn`, retrying (up to `attempts` times in all) when Postgres aborts it as a deadlock victim. */
export async function retryOnDeadlock<T>(fn: () => Promise<T>, attempts = 4): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      if (i >= attempts || (code !== '40P01' && code !== '40001')) throw err;
      await new Promise((r) => setTimeout(r, 2 * i + Math.random() * 5));
    }
  }
}
