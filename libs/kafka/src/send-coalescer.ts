import type { OutboundMessage } from './port.js';

/** One topic's messages in a coalesced request. */
export interface TopicMessages {
  topic: string;
  messages: OutboundMessage[];
}

interface Pending {
  topic: string;
  messages: OutboundMessage[];
  resolve: () => void;
  reject: (err: unknown) => void;
}

/**
 * Coalesces concurrent `send` calls into one produce request, the job a client's `linger.ms` does
 * (kafkajs has none): sends made while a request is in flight, or within `lingerMs` of the first
 * one, go out together in submission order, and each caller resolves when that request is
 * acknowledged (or rejects with its error). An idempotent producer allows one request in flight, so
 * without this every single-message send would pay a full broker round trip on its own.
 */
export class SendCoalescer {
  private queue: Pending[] = [];
  private inFlight = false;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly sendBatch: (batch: TopicMessages[]) => Promise<void>,
    private readonly lingerMs: number,
    private readonly maxMessages = 10_000,
  ) {}

  send(topic: string, messages: OutboundMessage[]): Promise<void> {
    if (messages.length === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ topic, messages, resolve, reject });
      if (!this.inFlight && this.timer === null) {
        this.timer =
          this.lingerMs > 0
            ? setTimeout(() => this.flush(), this.lingerMs)
            : (setImmediate(() => this.flush()) as unknown as NodeJS.Timeout);
      }
    });
  }

  private flush(): void {
    this.timer = null;
    if (this.inFlight || this.queue.length === 0) return;
    const taken: Pending[] = [];
    let count = 0;
    while (
      this.queue.length > 0 &&
      (taken.length === 0 || count + this.queue[0]!.messages.length <= this.maxMessages)
    ) {
      const p = this.queue.shift()!;
      taken.push(p);
      count += p.messages.length;
    }
    const byTopic = new Map<string, OutboundMessage[]>();
    for (const p of taken) {
      const list = byTopic.get(p.topic);
      if (list) list.push(...p.messages);
      else byTopic.set(p.topic, [...p.messages]);
    }
    this.inFlight = true;
    this.sendBatch([...byTopic].map(([topic, messages]) => ({ topic, messages })))
      .then(
        () => {
          for (const p of taken) p.resolve();
        },
        (err: unknown) => {
          for (const p of taken) p.reject(err);
        },
      )
      .finally(() => {
        this.inFlight = false;
        if (this.queue.length > 0) this.flush();
      });
  }
}
