import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import type { Standins } from '../../tools/standins';
import type { RunResult } from '../../src/core/run-types';
import { eventually, useDevEnv, unique, withWorker } from '../helpers/env';
import { startOutside } from '../helpers/outside';
import { campaignBody, post, standardHeaders, type Answer } from '../helpers/ingress';

const env = useDevEnv();
let standins: Standins;
let activities: object;
before(async () => {
  await env.ready();
  ({ standins, activities } = await startOutside());
});
after(async () => {
  await standins?.close();
});

test('the ingress process SIGKILLed mid-burst: every delivery answered 202 has its run', async () => {
  const taskQueue = unique('ingress-kill');
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, '..', 'helpers', 'ingress-process.ts'), env.server.address, taskQueue], {
    env: { ...process.env, WAKEGATE_INGRESS_RATE_PER_S: '100000', WAKEGATE_INGRESS_BURST: '100000', WAKEGATE_LOG_LEVEL: 'silent' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr.on('data', (b: Buffer) => (out += b.toString()));
  const exited = new Promise<void>((r) => child.on('exit', () => r()));
  const url = (await eventually(
    async () => /LISTENING (\S+)/.exec(out)?.[1],
    (u) => u !== undefined,
    30_000,
    'the ingress process',
  )) as string;

  const prefix = unique('kill');
  const total = 300;
  let answered = 0;
  const outcomes: (Answer | Error)[] = new Array(total);
  let next = 0;
  await Promise.all(
    Array.from({ length: 24 }, async () => {
      for (;;) {
        const i = next++;
        if (i >= total) return;
        const body = campaignBody(`${prefix}-${i}`, { dashboards: ['quiet-reach'] });
        try {
          outcomes[i] = await post(`${url}/webhooks/campaigns`, body, standardHeaders(body, `kill-${i}`));
        } catch (err) {
          outcomes[i] = err as Error;
        }
        if (++answered === 60) child.kill('SIGKILL'); // mid-burst: requests are on the wire and in the gate
      }
    }),
  );
  await exited;
  const accepted = outcomes.filter((o): o is Answer => !(o instanceof Error) && o.status === 202);
  const failed = outcomes.filter((o) => o instanceof Error).length;
  const other = outcomes.filter((o) => !(o instanceof Error) && o.status !== 202);
  assert.equal(other.length, 0, JSON.stringify(other.slice(0, 3)));
  assert.ok(accepted.length >= 50, `accepted ${accepted.length}`);
  assert.ok(failed >= 1, 'the kill cut some deliveries off');

  // Every 202 is in Temporal with the run it named, and runs to its end.
  await withWorker(
    env.nativeConnection,
    taskQueue,
    async () => {
      for (const a of accepted) {
        const handle = env.client.workflow.getHandle(a.json.runKey!);
        assert.equal((await handle.describe()).runId, a.json.runId);
        const result = (await handle.result()) as RunResult;
        assert.equal(result.terminalReason, 'no_op', result.summary);
      }
    },
    { activities },
  );
  console.log(`kill: ${accepted.length} answered 202 (all have their run), ${failed} cut off by the kill`);
});
