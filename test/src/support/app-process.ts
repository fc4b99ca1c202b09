import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { APP_NODE_FLAGS } from '@sched/config';
import { endpoints } from './isolation.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

export type AppName = 'scheduler' | 'worker' | 'api';

export interface SchedulerProcess {
  child: ChildProcess;
  pid: number;
  ownerId: string;
  metricsPort: number;
  /** Everything the process printed (stdout + stderr), for failure messages. */
  output(): string;
  metrics(): Promise<string>;
  /** Value of one metric series (sum over label sets when `labels` omitted). */
  metric(name: string, labels?: Record<string, string>): Promise<number>;
  signal(sig: NodeJS.Signals): void;
  /** SIGTERM and wait for exit (SIGKILL after 10 s). */
  stop(): Promise<void>;
  exited: Promise<number | null>;
}

/** Starts `apps/scheduler/src/main.ts` as a real child process and waits until it is consuming. */
export function startScheduler(
  env: Record<string, string>,
  readyTimeoutMs = 60_000,
): Promise<SchedulerProcess> {
  return startApp('scheduler', env, readyTimeoutMs);
}

/**
 * Starts `apps/<app>/src/main.ts` as a real child process and waits for its READY line; with
 * `built`, the bundle `apps/<app>/dist/main.js` under plain Node (`npm run build` made it).
 */
export async function startApp(
  app: AppName,
  env: Record<string, string>,
  readyTimeoutMs = 60_000,
  options: { built?: boolean } = {},
): Promise<SchedulerProcess> {
  const ep = endpoints();
  const marker = new RegExp(`${app.toUpperCase()}_READY (\\{.*\\})`);
  const entry = options.built ? [`apps/${app}/dist/main.js`] : ['--import', 'tsx', `apps/${app}/src/main.ts`];
  const child = spawn(process.execPath, [...APP_NODE_FLAGS, ...entry], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: ep.databaseUrl,
      KAFKA_BROKERS: ep.kafkaBrokers.join(','),
      SCHED_REGISTRY_URL: ep.registryUrl,
      SCHED_METRICS_PORT: '0',
      SCHED_WORKER_METRICS_PORT: '0',
      LOG_LEVEL: process.env.TEST_APP_LOG_LEVEL ?? 'warn',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const ready = new Promise<{ ownerId: string; metricsPort: number }>((resolve, reject) => {
    const timer = setTimeout(() => {
      // Not left running: a process that never became ready would outlive the test.
      child.kill('SIGKILL');
      reject(new Error(`${app} not ready in ${readyTimeoutMs} ms:\n${out.slice(-4000)}`));
    }, readyTimeoutMs);
    const onData = (b: Buffer) => {
      out += b.toString();
      const m = marker.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(JSON.parse(m[1]!) as { ownerId: string; metricsPort: number });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (b: Buffer) => (out += b.toString()));
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`${app} exited with ${code} before ready:\n${out.slice(-4000)}`));
    });
  });
  const info = await ready;
  const metrics = async () => (await fetch(`http://127.0.0.1:${info.metricsPort}/metrics`)).text();
  return {
    child,
    pid: child.pid!,
    ownerId: info.ownerId,
    metricsPort: info.metricsPort,
    output: () => out,
    metrics,
    async metric(name, labels) {
      const text = await metrics();
      let sum = 0;
      for (const line of text.split('\n')) {
        if (!line.startsWith(name)) continue;
        const m = /^([a-z_]+)(\{[^}]*\})? ([0-9.e+-]+)$/.exec(line);
        if (!m || m[1] !== name) continue;
        if (labels && !Object.entries(labels).every(([k, v]) => (m[2] ?? '').includes(`${k}="${v}"`)))
          continue;
        sum += Number(m[3]);
      }
      return sum;
    },
    signal(sig) {
      if (child.exitCode === null) child.kill(sig);
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGCONT');
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(t);
    },
    exited,
  };
}
