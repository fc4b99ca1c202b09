import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { APP_NODE_FLAGS } from '@sched/config';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

export interface RunningApp {
  name: string;
  child: ChildProcess;
  /** What the app printed when ready (scheduler/worker: ownerId, metricsPort; api: host, port). */
  info: { ownerId?: string; metricsPort?: number; host?: string; port?: number };
  stop(): Promise<void>;
}

/** Starts `apps/<name>/src/main.ts` as a child process, its logs going to `logFile`; resolves when ready. */
export function startApp(
  name: 'scheduler' | 'worker' | 'api',
  env: Record<string, string>,
  onLine: (line: string) => void,
): Promise<RunningApp> {
  const child = spawn(process.execPath, [...APP_NODE_FLAGS, '--import', 'tsx', `apps/${name}/src/main.ts`], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const marker = new RegExp(`${name.toUpperCase()}_READY (\\{.*\\})`);
  return new Promise((resolve, reject) => {
    let buf = '';
    const onData = (b: Buffer) => {
      buf += b.toString();
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        onLine(line);
        const m = marker.exec(line);
        if (m) {
          resolve({
            name,
            child,
            info: JSON.parse(m[1]!) as RunningApp['info'],
            stop: async () => {
              if (child.exitCode !== null) return;
              const done = new Promise((r) => child.once('exit', r));
              child.kill('SIGTERM');
              const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
              await done;
              clearTimeout(t);
            },
          });
        }
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${name} exited with ${code} before it was ready`)));
  });
}
