import { CONNECTOR_NAME, connectAnswers, connectorState } from './connector.js';
import { kafkaHealth } from './kafka-broker.js';
import { slotInfo } from './postgres.js';
import { registryHealth } from './registry.js';
import {
  redact,
  SERVICE_PORTS,
  servicePid,
  SLOT_NAME,
  type ServiceName,
  type ServiceStatus,
  type StackContext,
} from './context.js';

/** Real health per service: the broker answers metadata, the registry its API, the connector and slot run. */

export async function serviceStatus(ctx: StackContext, name: ServiceName): Promise<ServiceStatus> {
  const pid = servicePid(ctx, name);
  const base = { name, pid, external: name === 'postgres' && !ctx.ownPostgres };
  const port = SERVICE_PORTS[name].map((k) => ctx.s[k])[0] ?? 0;
  switch (name) {
    case 'postgres': {
      const url = ctx.endpoints.databaseUrl;
      const portOf = Number(new URL(url).port || 5432);
      if (ctx.ownPostgres && pid === undefined)
        return { ...base, port: portOf, healthy: false, detail: 'not running' };
      try {
        const slot = await slotInfo(url, SLOT_NAME);
        const slotText = slot.exists
          ? `slot ${SLOT_NAME} ${slot.active ? 'active' : 'INACTIVE'}, lag ${formatBytes(slot.lagBytes)}, ${
              slot.heartbeatAgeS === undefined
                ? 'no heartbeat yet'
                : `heartbeat ${Math.round(slot.heartbeatAgeS)} s ago`
            }`
          : `slot ${SLOT_NAME} absent`;
        if (slot.walLevel !== 'logical')
          return {
            ...base,
            port: portOf,
            healthy: false,
            detail: `wal_level=${slot.walLevel}, needs logical; ${slotText}`,
          };
        return {
          ...base,
          port: portOf,
          healthy: true,
          detail: `${base.external ? `DATABASE_URL ${redact(url)}: ` : ''}accepts connections, wal_level=logical; ${slotText}`,
        };
      } catch (err) {
        return { ...base, port: portOf, healthy: false, detail: (err as Error).message };
      }
    }
    case 'kafka': {
      if (pid === undefined) return { ...base, port, healthy: false, detail: 'not running' };
      const h = await kafkaHealth(ctx.endpoints.kafkaBrokers);
      return { ...base, port, healthy: h.ok, detail: h.detail };
    }
    case 'registry': {
      if (pid === undefined) return { ...base, port, healthy: false, detail: 'not running' };
      const h = await registryHealth(ctx.endpoints.registryUrl);
      return { ...base, port, healthy: h.ok, detail: h.detail };
    }
    case 'connect': {
      if (pid === undefined) return { ...base, port, healthy: false, detail: 'not running' };
      const h = await connectHealth(ctx);
      return { ...base, port, healthy: h.ok, detail: h.detail };
    }
  }
}

/** Connector and every task RUNNING, and the replication slot active. */
export async function connectHealth(
  ctx: StackContext,
): Promise<{ ok: boolean; detail: string; failed?: string; readerPid?: number }> {
  if (!(await connectAnswers(ctx.endpoints.connectUrl)))
    return { ok: false, detail: 'REST API does not answer' };
  const st = await connectorState(ctx.endpoints.connectUrl).catch(() => undefined);
  if (!st) return { ok: false, detail: `connector ${CONNECTOR_NAME} not registered` };
  const tasks = st.tasks.map((t) => `task ${t.id} ${t.state}`).join(', ') || 'no task yet';
  const failed =
    st.tasks.find((t) => t.state === 'FAILED')?.trace ??
    (st.connector === 'FAILED' ? 'connector FAILED' : undefined);
  let slot = 'slot unknown';
  let slotActive = false;
  let readerPid: number | undefined;
  try {
    const info = await slotInfo(ctx.endpoints.databaseUrl, SLOT_NAME);
    slotActive = info.active;
    readerPid = info.activePid;
    slot = info.exists ? `slot ${info.active ? 'active' : 'inactive'}` : 'slot absent';
  } catch (err) {
    slot = `slot unknown (${(err as Error).message})`;
  }
  const ok =
    st.connector === 'RUNNING' &&
    st.tasks.length > 0 &&
    st.tasks.every((t) => t.state === 'RUNNING') &&
    slotActive;
  const detail = `${CONNECTOR_NAME} ${st.connector}, ${tasks}, ${slot}${failed ? `: ${failed.split('\n')[0]}` : ''}`;
  return failed ? { ok, detail, failed, readerPid } : { ok, detail, readerPid };
}

export function formatBytes(n: number | undefined): string {
  if (n === undefined) return 'unknown';
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}
