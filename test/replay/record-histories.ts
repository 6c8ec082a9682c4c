/**
 * Re-record the committed histories the replay test runs over: `node --import tsx test/replay/record-histories.ts`.
 * Do this only on purpose (a deliberate, patched change to workflow code); the replay test exists to
 * catch an accidental one.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { approveSignal, killUpdate, statusQuery } from '../../workflows/messages';
import type { WakeStatus } from '../../workflows/types';
import { eventually, startDevEnv, unique, withWorker } from '../helpers/env';
import { startOutside, startWake, wakeInput } from '../helpers/outside';
import { coalescing } from '../helpers/agents';
import { Gate } from '../../gate/gate';
import { awaitRun } from '../../gate/await-run';
import { defaultRegistry } from '../../triggers/registry';
import { createActivities } from '../../activities';
import { localOutside } from '../../config/config';

async function main(): Promise<void> {
  const env = await startDevEnv();
  const { standins, activities } = await startOutside();
  const taskQueue = unique('record');
  // Plain JSON of the proto (longs, enums, bytes as strings): what History.fromObject reads back.
  const History = temporal.api.history.v1.History;
  const out = async (name: string, handle: { fetchHistory(): Promise<temporal.api.history.v1.IHistory> }) => {
    const decoded = History.decode(History.encode(await handle.fetchHistory()).finish());
    const json = History.toObject(decoded, { longs: String, enums: String, bytes: String });
    writeFileSync(path.join(__dirname, 'histories', `${name}.json`), JSON.stringify(json, null, 1));
  };
  try {
    await withWorker(env.nativeConnection, taskQueue, async () => {
      const deps = await startWake(env.client, taskQueue, wakeInput('deps', 'acme/web:react', 'release.published', { repo: 'acme/web', package: 'react', from: '19.0.0', to: '19.1.0' }));
      await deps.result();
      await out('deps-success', deps);

      const campaign = await startWake(env.client, taskQueue, wakeInput('campaigns', 'spring', 'report.due', { dashboards: ['reach', 'quiet-ctr'] }));
      await eventually(() => campaign.query(statusQuery), (s: WakeStatus) => s.awaitingApproval !== undefined, 30_000);
      await campaign.signal(approveSignal, { who: 'ana' });
      await campaign.result();
      await out('campaign-approved', campaign);

      const killed = await startWake(env.client, taskQueue, wakeInput('campaigns', 'autumn', 'report.due', { dashboards: ['reach'] }));
      await eventually(() => killed.query(statusQuery), (s: WakeStatus) => s.awaitingApproval !== undefined, 30_000);
      await killed.executeUpdate(killUpdate, { args: [{ who: 'ops', reason: 'recording' }] });
      await killed.result();
      await out('campaign-killed', killed);
    }, { activities });

    // The coalescing path: two events in one batch, a third in a second batch, then the coalescer
    // closes idle. Its history, one admission record's and one coalesced run's are recorded.
    const agents = coalescing('canary', { debouncePeriodMs: 300, maxWaitMs: 2000, idleCloseMs: 2000 });
    const coalesceQueue = unique('record-coalesce');
    await withWorker(env.nativeConnection, coalesceQueue, async () => {
      const gate = new Gate({ client: env.client, taskQueue: coalesceQueue, registry: defaultRegistry(agents) });
      const ping = (type: string) => ({ source: 'ping', entity: 'recorded', type, occurredAt: '2026-12-02T10:00:00Z', payload: {}, deliveryId: `rec-${type}` });
      const a = await gate.admit(ping('one'));
      await gate.admit(ping('two'));
      await awaitRun(env.client, a);
      const c = await gate.admit(ping('three'));
      await awaitRun(env.client, c);
      const coalescer = env.client.workflow.getHandle(a.coalescerId!);
      await coalescer.result();
      await out('coalescer-two-runs', coalescer);
      await out('admission-started', env.client.workflow.getHandle(a.admissionId!));
      await out('canary-coalesced', env.client.workflow.getHandle(a.workflowId));
    }, { activities: createActivities({ agents, outside: localOutside(standins.urls) }) });
  } finally {
    await standins.close();
    await env.teardown();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
