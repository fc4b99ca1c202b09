import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { parse as parseYaml } from 'yaml';
import { parser } from '@prometheus-io/lezer-promql';
import type { MessageProducer } from '@sched/kafka';
import { createRegistry } from '@sched/metrics';
import { scenarioApi } from './support/api.js';
import { createJob, kafka, until } from './support/kafka.js';
import { Scenario } from './support/scenario.js';

// The observability pack (deploy/observability) against the running processes: every alert rule
// and dashboard query is valid PromQL, and every metric it names is exposed by the real
// scheduler, worker or API; the outbox slot gauges say the slot is held and how far behind it is.

const PACK = fileURLToPath(new URL('../../deploy/observability/', import.meta.url));

interface Rule {
  alert: string;
  expr: string;
  annotations?: { runbook?: string };
}

function packQueries(): { where: string; expr: string }[] {
  const rules = (
    parseYaml(readFileSync(`${PACK}prometheus/alerts.yml`, 'utf8')) as {
      groups: { rules: Rule[] }[];
    }
  ).groups.flatMap((g) => g.rules);
  const dashboard = JSON.parse(readFileSync(`${PACK}grafana/sched-overview.json`, 'utf8')) as {
    panels: { title: string; targets: { expr: string }[] }[];
  };
  return [
    ...rules.map((r) => ({ where: `alert ${r.alert}`, expr: r.expr })),
    ...dashboard.panels.flatMap((p) => p.targets.map((t) => ({ where: `panel "${p.title}"`, expr: t.expr }))),
  ];
}

/** The metric names a query reads (a histogram's series by its own name). */
function metricNames(expr: string): string[] {
  return [
    ...new Set(
      [...expr.matchAll(/\b(sched_[a-z0-9_]+)\b/g)].map((m) => m[1]!.replace(/_(bucket|count|sum)$/, '')),
    ),
  ];
}

/** The names a /metrics page declares (`# TYPE name kind`). */
function exposed(page: string): Set<string> {
  return new Set([...page.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!));
}

describe('the observability pack against the running processes', () => {
  let s: Scenario;
  let api: FastifyInstance;
  let producer: MessageProducer;

  beforeAll(async () => {
    s = await Scenario.create('observe', 2);
    await s.startScheduler({ SCHED_SLOT_CHECK_EVERY_MS: '500' });
    await s.startWorker();
    producer = await kafka().producer();
    api = await scenarioApi(s, producer, {}, createRegistry({ component: 'api' }));
  });
  afterAll(async () => {
    await api?.close();
    await producer?.disconnect();
    await s?.close();
  });

  it('every rule and panel is valid PromQL, and every rule names its runbook', () => {
    const queries = packQueries();
    expect(queries.length).toBeGreaterThan(30);
    for (const q of queries) {
      let error = false;
      parser.parse(q.expr).iterate({
        enter: (n) => {
          if (n.type.isError) error = true;
        },
      });
      expect(error, `${q.where}: ${q.expr}`).toBe(false);
    }
    const rules = (
      parseYaml(readFileSync(`${PACK}prometheus/alerts.yml`, 'utf8')) as {
        groups: { rules: Rule[] }[];
      }
    ).groups.flatMap((g) => g.rules);
    const operations = readFileSync(
      fileURLToPath(new URL('../../docs/operations.md', import.meta.url)),
      'utf8',
    );
    const anchors = new Set(
      [...operations.matchAll(/^#+ (.+)$/gm)].map((m) =>
        m[1]!
          .toLowerCase()
          .replace(/[^a-z0-9 -]/g, '')
          .replace(/ /g, '-'),
      ),
    );
    for (const r of rules) {
      const anchor = r.annotations?.runbook?.split('#')[1];
      expect(anchor && anchors.has(anchor), `${r.alert}: runbook ${r.annotations?.runbook}`).toBe(true);
    }
  });

  it('every metric the rules and the dashboard name is exposed by the scheduler, worker or API', async () => {
    const pages = [
      await s.schedulers[0]!.metrics(),
      await s.workers[0]!.metrics(),
      (await api.inject({ method: 'GET', url: '/metrics' })).body,
    ];
    const names = new Set(pages.flatMap((p) => [...exposed(p)]));
    const used = [...new Set(packQueries().flatMap((q) => metricNames(q.expr)))].sort();
    expect(used.length).toBeGreaterThan(30);
    expect(used.filter((n) => !names.has(n))).toEqual([]);
    console.log(
      `observability: ${used.length} metric names in the pack, all exposed by the running processes`,
    );
  });

  it('the worker measures a job from its due time to its success, per queue', async () => {
    await s.producer.send([
      createJob('observed-1', s.queue, Date.now() + 500, { payload: Buffer.from('{}') }),
    ]);
    await until('succeeded', 30_000, async () => (await s.jobStates()).get('observed-1') === 'SUCCEEDED');
    const worker = s.workers[0]!;
    await until(
      'observed',
      10_000,
      async () => (await worker.metric('sched_worker_due_to_success_seconds_count', { queue: s.queue })) >= 1,
    );
    const seconds = await worker.metric('sched_worker_due_to_success_seconds_sum', { queue: s.queue });
    expect(seconds).toBeGreaterThan(0);
    expect(seconds).toBeLessThan(30);
  });

  it("the slot gauges see the outbox slot held by Connect, and the command topic's partitions", async () => {
    const sched = s.schedulers[0]!;
    await until('slot gauge set', 20_000, async () => (await sched.metric('sched_outbox_slot_active')) === 1);
    expect(await sched.metric('sched_outbox_slot_lag_bytes')).toBeGreaterThanOrEqual(0);
    expect(await sched.metric('sched_command_topic_partitions')).toBe(2);
  });
});
