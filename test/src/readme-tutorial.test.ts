import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import type { MessageProducer } from '@sched/kafka';
import { scenarioApi } from './support/api.js';
import { kafka } from './support/kafka.js';
import { runToExit } from './support/run-process.js';
import { Scenario } from './support/scenario.js';

// The README's tutorial, run as written: every line of its shell block, in order, against a real
// API and scheduler. The admin key the demo would print is this test's bootstrap key; the tenant's
// key is the one `tenant key` printed. A tutorial that no longer works fails here.

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The shell block of the README's tutorial section. */
export function tutorialLines(readme: string): string[] {
  const section = readme.slice(readme.indexOf('## Tutorial'));
  const block = /```sh\n([\s\S]*?)```/.exec(section);
  if (!block) throw new Error('README: no ```sh block in the tutorial section');
  return block[1]!
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
}

/** Shell words: single- or double-quoted strings, else runs of non-space; a `#` outside quotes ends the line. */
function words(line: string): string[] {
  const out: string[] = [];
  for (const m of line.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)) {
    if (m[3]?.startsWith('#')) break;
    out.push(m[1] ?? m[2] ?? m[3]!);
  }
  return out;
}

describe("the README's tutorial, line by line", () => {
  let s: Scenario;
  let api: FastifyInstance;
  let producer: MessageProducer;
  let url: string;
  const ADMIN = 'readme-admin-key';

  beforeAll(async () => {
    s = await Scenario.create('readme', 2);
    await s.startScheduler();
    producer = await kafka().producer();
    api = await scenarioApi(s, producer, {
      [ADMIN]: { id: 'demo-admin', tenantId: 'default', permissions: ['admin'] },
    });
    await api.listen({ host: '127.0.0.1', port: 0 });
    url = `http://127.0.0.1:${(api.server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await api?.close();
    await producer?.disconnect();
    await s?.close();
  });

  it('runs every command of it, each exiting 0', async () => {
    const lines = tutorialLines(readFileSync(`${ROOT}README.md`, 'utf8'));
    expect(lines.length).toBeGreaterThanOrEqual(6);
    let key = '';
    let lastOut = '';
    const ran: string[] = [];
    for (const line of lines) {
      const w = words(line);
      if (w[0] === 'export') {
        const [name, value] = w[1]!.split('=');
        expect(name).toBe('SCHED_API_KEY');
        // The first is the admin key the demo printed; the next one, the key `tenant key` printed.
        key = value!.startsWith('sk_') ? (JSON.parse(lastOut) as { key: string }).key : ADMIN;
        continue;
      }
      expect(w.slice(0, 4), line).toEqual(['npm', 'run', '-s', 'sched']);
      const r = await runToExit('npm', w.slice(1), {
        cwd: ROOT,
        env: { ...process.env, SCHED_API_URL: url, SCHED_API_KEY: key },
      });
      expect(r.status, `${line}\n${r.stdout.slice(-1000)}\n${r.stderr.slice(-1000)}`).toBe(0);
      lastOut = r.stdout;
      ran.push(w.slice(5, 7).join(' '));
    }
    // What the tutorial did, as the database has it.
    const { rows } = await s.db.pool.query<{ state: string; version: number; tenant_id: string }>(
      "SELECT state, version, tenant_id FROM job WHERE job_id = 'welcome-1'",
    );
    expect(rows[0]).toMatchObject({ state: 'CANCELLED', tenant_id: 'acme' });
    console.log(`readme tutorial: ${ran.length} commands ran (${ran.join(', ')}), welcome-1 ended CANCELLED`);
  });
});
