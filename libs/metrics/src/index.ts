import { createServer, type Server } from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import client from 'prom-client';

export type { Counter, Gauge, Histogram, Registry } from 'prom-client';

/** A Prometheus registry of one process, with the default process metrics. */
export function createRegistry(labels: Record<string, string> = {}): client.Registry {
  const registry = new client.Registry();
  registry.setDefaultLabels(labels);
  client.collectDefaultMetrics({ register: registry });
  return registry;
}

export function counter(registry: client.Registry, name: string, help: string, labelNames: string[] = []) {
  return new client.Counter({ name, help, labelNames, registers: [registry] });
}

/**
 * A gauge; with `collect`, its values are (re)set by that function at every scrape, so a value that
 * changes on many paths (a size, say) is never stale.
 */
export function gauge(
  registry: client.Registry,
  name: string,
  help: string,
  labelNames: string[] = [],
  collect?: (g: client.Gauge) => void,
) {
  return new client.Gauge({
    name,
    help,
    labelNames,
    registers: [registry],
    ...(collect
      ? {
          collect(this: client.Gauge) {
            collect(this);
          },
        }
      : {}),
  });
}

/**
 * A gauge without labels whose value is read at each scrape from a source another object owns (a
 * count kept by a client, say), set once that object exists; 0 until then.
 */
export function gaugeReadAtScrape(
  registry: client.Registry,
  name: string,
  help: string,
): { setSource(source: () => number): void } {
  let source: () => number = () => 0;
  gauge(registry, name, help, [], (g) => g.set(source()));
  return {
    setSource(s: () => number): void {
      source = s;
    },
  };
}

/** Latency buckets in seconds from 1 ms to 60 s. */
export const LATENCY_BUCKETS_S = [
  0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
];

export function histogram(
  registry: client.Registry,
  name: string,
  help: string,
  buckets: number[] = LATENCY_BUCKETS_S,
  labelNames: string[] = [],
) {
  return new client.Histogram({ name, help, buckets, labelNames, registers: [registry] });
}

/**
 * Serves `GET /metrics` (Prometheus text) and `GET /healthz` on 127.0.0.1:`port` (0 = any free port),
 * and `POST /debug/gc` for heap diagnostics: when node runs with `--expose-gc` it collects garbage and
 * answers `{"heapUsedBytes": n}` (the live heap, which `nodejs_heap_size_used_bytes` is not: that
 * includes garbage no major collection has taken yet); without the flag it answers 404.
 */
export async function serveMetrics(
  registry: client.Registry,
  port: number,
  host = '127.0.0.1',
  healthy: () => boolean = () => true,
): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    if (req.url === '/metrics') {
      registry
        .metrics()
        .then((text) => {
          res.writeHead(200, { 'content-type': registry.contentType });
          res.end(text);
        })
        .catch((err: unknown) => {
          res.writeHead(500);
          res.end(String(err));
        });
    } else if (req.url === '/debug/gc' && req.method === 'POST') {
      const gc = (globalThis as { gc?: () => void }).gc;
      if (typeof gc !== 'function') {
        res.writeHead(404, { 'content-type': 'text/plain' });
        res.end('garbage collection is not exposed: start node with --expose-gc');
        return;
      }
      gc();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ heapUsedBytes: process.memoryUsage().heapUsed }));
    } else if (req.url === '/healthz') {
      const ok = healthy();
      res.writeHead(ok ? 200 : 503);
      res.end(ok ? 'ok' : 'unhealthy');
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const addr = server.address();
  return { server, port: typeof addr === 'object' && addr ? addr.port : port };
}

/**
 * Watches the event loop: every `everyMs` it reads the longest delay seen since the last look
 * (perf_hooks' delay histogram, and how late its own timer fired) and calls `onStall(ms)` when it
 * exceeded `stallMs`. The gauge `name` reports the longest delay since the previous scrape, so a
 * stall between two scrapes is not lost. A timer firing late because the loop was busy (a long
 * synchronous task, a GC pause) shows here. The lateness of its own timer is the backstop: the
 * histogram once showed nothing of a 400 ms block on a loaded machine (a unit test, in CI).
 */
export function watchEventLoop(
  registry: client.Registry,
  name: string,
  opts: { stallMs: number; everyMs?: number; onStall: (delayMs: number) => void },
): { stop(): void } {
  const h = monitorEventLoopDelay({ resolution: 10 });
  h.enable();
  const everyMs = opts.everyMs ?? 1_000;
  let sinceScrapeMs = 0;
  let lastLookAt = performance.now();
  const look = () => {
    // The histogram's max is in nanoseconds and includes the sampling resolution.
    const histogramMs = h.count > 0 ? h.max / 1e6 : 0;
    h.reset();
    const now = performance.now();
    // How late this look came, when the interval ran it (a look from a scrape comes early: 0).
    const lateMs = Math.max(0, now - lastLookAt - everyMs);
    lastLookAt = now;
    const ms = Math.max(histogramMs, lateMs);
    sinceScrapeMs = Math.max(sinceScrapeMs, ms);
    if (ms > opts.stallMs) opts.onStall(Math.round(ms));
  };
  const timer = setInterval(look, everyMs);
  timer.unref();
  new client.Gauge({
    name,
    help: 'longest event-loop delay since the previous scrape, seconds',
    registers: [registry],
    collect() {
      look();
      this.set(sinceScrapeMs / 1000);
      sinceScrapeMs = 0;
    },
  });
  return {
    stop() {
      clearInterval(timer);
      h.disable();
    },
  };
}
