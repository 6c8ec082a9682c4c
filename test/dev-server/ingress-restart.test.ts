import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { RunningIngress } from '../../src/processes/ingress-listeners';
import type { Standins } from '../../tools/standins';
import type { RunResult } from '../../src/core/run-types';
import { eventually, useDevEnv, unique, withWorker } from '../helpers/env';
import { startOutside } from '../helpers/outside';
import { campaignBody, post, standardHeaders, startTestIngress } from '../helpers/ingress';

const env = useDevEnv({ dbFilename: path.join(mkdtempSync(path.join(tmpdir(), 'wakegate-ingress-restart-')), 'dev.db') });
let standins: Standins;
let activities: object;
let ingress: RunningIngress | undefined;
before(async () => {
  await env.ready();
  ({ standins, activities } = await startOutside());
});
after(async () => {
  await ingress?.close();
  await standins?.close();
});

test('Temporal stopped: 503 with Retry-After and nothing accepted, the in-flight cap sheds the rest; restarted: the sender retry is accepted once and runs', async () => {
  const taskQueue = unique('ingress-down');
  const campaign = unique('down');
  // "quiet" dashboards report no change: the run ends no_op without waiting for a person.
  const body = campaignBody(campaign, { dashboards: ['quiet-reach'] });
  const deliver = async () => {
    // A fresh ingress per delivery: the process that answered 503 need not be the one the retry reaches.
    await ingress?.close();
    ingress = await startTestIngress(env, taskQueue, { temporalTimeoutMs: 2000, unavailableRetryAfterS: 7 });
    return post(`${ingress.url}/webhooks/campaigns`, body, standardHeaders(body, 'down-1'));
  };

  await env.server.stop();
  const down = await deliver();
  assert.equal(down.status, 503, JSON.stringify(down.json));
  assert.equal(down.retryAfter, '7');
  assert.equal(down.json.error?.code, 'temporal_unavailable');
  assert.match(await (await fetch(`${ingress!.operatorUrl}/metrics`)).text(), /wakegate_ingress_unavailable_total\{source="campaigns"\} 1\n/);

  // While Temporal does not answer, requests pile up in the ingress; the in-flight cap sheds the
  // ones beyond it at once (429, reject-newest) instead of holding them.
  const capped = await startTestIngress(env, taskQueue, { temporalTimeoutMs: 2000, maxInFlight: 2 });
  try {
    const stuck = await Promise.all(
      Array.from({ length: 5 }, (_, i) => {
        const b = campaignBody(`${campaign}-cap-${i}`);
        return post(`${capped.url}/webhooks/campaigns`, b, standardHeaders(b, `cap-${i}`));
      }),
    );
    assert.deepEqual(stuck.map((a) => a.status).sort(), [429, 429, 429, 503, 503]);
    for (const a of stuck.filter((x) => x.status === 429)) assert.equal(a.retryAfter, '1');
    assert.match(
      await (await fetch(`${capped.operatorUrl}/metrics`)).text(),
      /wakegate_ingress_shed_total\{source="campaigns",reason="in_flight",policy="reject-newest"\} 3\n/,
    );
  } finally {
    await capped.close();
  }

  await env.server.up();
  await env.reconnect();
  const retry = await deliver();
  assert.equal(retry.status, 202, JSON.stringify(retry.json));
  assert.equal(retry.json.decision, 'started');
  const again = await deliver();
  assert.equal(again.status, 202);
  assert.ok(again.json.decision === 'in_progress' || again.json.decision === 'completed', String(again.json.decision));
  assert.equal(again.json.runId, retry.json.runId);

  await withWorker(
    env.nativeConnection,
    taskQueue,
    async () => {
      const result = (await env.client.workflow.getHandle(retry.json.runKey!).result()) as RunResult;
      assert.equal(result.terminalReason, 'no_op', result.summary);
      assert.deepEqual(result.deliveryIds, ['down-1']);
    },
    { activities },
  );
  const count = () => env.client.workflow.count(`WorkflowId = "${retry.json.runKey}"`).then((c) => c.count);
  assert.equal(await eventually(count, (n) => n >= 1), 1);
  await new Promise((r) => setTimeout(r, 1000));
  assert.equal(await count(), 1);
});
