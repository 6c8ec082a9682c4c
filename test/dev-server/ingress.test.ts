import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { RunResult, RunStatus } from '../../src/core/run-types';
import { approveSignal, statusQuery } from '../../src/core/messages';
import type { Standins } from '../../tools/standins';
import { eventually, useDevEnv, unique, withWorker } from '../helpers/env';
import { startOutside } from '../helpers/outside';
import { quickAgents } from '../helpers/agents';
import { Gate } from '../../src/gate/gate';
import { campaignBody, githubHeaders, post, releaseBody, standardHeaders, startTestIngress } from '../helpers/ingress';
import { registryOf } from '../helpers/app';

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

const executions = (workflowId: string) => env.client.workflow.count(`WorkflowId = "${workflowId}"`).then((c) => c.count);

describe('the webhook ingress on the real dev server', () => {
  test('a signed campaign config change is accepted (202 after Temporal has it) and runs; redelivered 5 times by the sender: one run', async () => {
    const taskQueue = unique('ingress-campaign');
    const ingress = await startTestIngress(env, taskQueue);
    try {
      await withWorker(
        env.nativeConnection,
        taskQueue,
        async () => {
          const campaign = unique('spring-sale');
          const body = campaignBody(campaign);
          const url = `${ingress.url}/webhooks/campaigns`;
          const first = await post(url, body, standardHeaders(body, 'msg-1'));
          assert.equal(first.status, 202, JSON.stringify(first.json));
          assert.equal(first.json.decision, 'started');
          assert.match(String(first.json.eventKey), new RegExp(`^campaigns/config.changed/${campaign}/2026-12-02T14:05:00Z$`));
          // Temporal has it: the run exists the moment the 202 is in hand.
          const handle = env.client.workflow.getHandle(first.json.runKey!);
          assert.equal((await handle.describe()).runId, first.json.runId);

          // The sender's retry policy: the same message (same webhook-id), re-signed with a new timestamp, 5 more times.
          for (let i = 0; i < 5; i++) {
            const again = await post(url, body, standardHeaders(body, 'msg-1', new Date(Date.now() + i * 1000)));
            assert.equal(again.status, 202, JSON.stringify(again.json));
            assert.ok(again.json.decision === 'in_progress' || again.json.decision === 'completed', String(again.json.decision));
            assert.equal(again.json.runKey, first.json.runKey);
            assert.equal(again.json.runId, first.json.runId);
          }

          const waiting = await eventually(
            () => handle.query(statusQuery),
            (s: RunStatus) => s.awaitingApproval !== undefined,
            30_000,
            'approval wait',
          );
          await handle.signal(approveSignal, { who: 'ingress-test', effectKey: waiting.awaitingApproval!.effectKey });
          const result = (await handle.result()) as RunResult;
          assert.equal(result.terminalReason, 'success', result.summary);
          assert.ok(result.deliveryIds.includes('msg-1'));
          assert.equal(
            await eventually(
              () => executions(first.json.runKey!),
              (n) => n >= 1,
            ),
            1,
          );
          await new Promise((r) => setTimeout(r, 1000)); // visibility is eventually consistent: a second run would show by now
          assert.equal(await executions(first.json.runKey!), 1);

          // After the run: the same delivery is answered with the stored result.
          const late = await post(url, body, standardHeaders(body, 'msg-1'));
          assert.equal(late.status, 202);
          assert.equal(late.json.decision, 'completed');
          assert.equal((late.json.result as RunResult).terminalReason, 'success');

          // The same event key with other inputs is refused like Stripe's idempotency error: 409, nothing started.
          const changed = campaignBody(campaign, { dashboards: ['other'] });
          const refused = await post(url, changed, standardHeaders(changed, 'msg-2'));
          assert.equal(refused.status, 409);
          assert.equal(refused.json.decision, 'mismatch');
          assert.equal(refused.json.error?.code, 'mismatch');
          assert.equal(await executions(first.json.runKey!), 1);

          const metrics = await (await fetch(`${ingress.operatorUrl}/metrics`)).text();
          assert.match(metrics, /wakegate_ingress_accepted_total\{source="campaigns",decision="started"\} 1\n/);
          assert.match(metrics, /wakegate_ingress_duplicate_total\{source="campaigns"\} 6\n/);
          assert.match(metrics, /wakegate_ingress_refused_total\{source="campaigns",reason="mismatch"\} 1\n/);
          assert.match(metrics, /wakegate_ingress_request_seconds_count\{source="campaigns",status="202"\} 7\n/);
        },
        { activities },
      );
    } finally {
      await ingress.close();
    }
  });

  test('with the reporter coalescing: a webhook, a report request and an older webhook about one campaign reach one coalescer', async () => {
    const taskQueue = unique('ingress-coalesce');
    const agents = quickAgents({ debouncePeriodMs: 5000, maxWaitMs: 20_000 });
    const ingress = await startTestIngress(env, taskQueue, {}, agents);
    try {
      await withWorker(
        env.nativeConnection,
        taskQueue,
        async () => {
          const campaign = unique('autumn');
          const url = `${ingress.url}/webhooks/campaigns`;
          const change = campaignBody(campaign, { version: 8 });
          const a = await post(url, change, standardHeaders(change, 'hook-a'));
          assert.equal(a.status, 202, JSON.stringify(a.json));
          assert.equal(a.json.decision, 'started');
          // A report request about the same campaign, as `wakegate emit` sends it: another gate, the same coalescer.
          const report = await new Gate({ client: env.client, taskQueue, registry: registryOf(agents) }).admit({
            source: 'campaigns',
            entity: campaign,
            type: 'report.due',
            occurredAt: '2026-12-02T14:06:00Z',
            payload: {},
          });
          assert.equal(report.decision, 'coalesced');
          assert.equal(report.runKey, a.json.runKey);
          // An older change delivered late: stale, recorded, 202 (stored; the sender must not retry it).
          const older = campaignBody(campaign, { version: 6, occurredAt: '2026-12-02T14:01:00Z' });
          const b = await post(url, older, standardHeaders(older, 'hook-b'));
          assert.equal(b.status, 202, JSON.stringify(b.json));
          assert.equal(b.json.decision, 'stale');
          const metrics = await (await fetch(`${ingress.operatorUrl}/metrics`)).text();
          assert.match(metrics, /wakegate_ingress_stale_total\{source="campaigns"\} 1\n/);
        },
        { activities },
      );
    } finally {
      await ingress.close();
    }
  });

  test('a GitHub release feeds the deps trigger and opens one PR; a ping is answered without storing anything', async () => {
    const taskQueue = unique('ingress-github');
    const ingress = await startTestIngress(env, taskQueue);
    try {
      await withWorker(
        env.nativeConnection,
        taskQueue,
        async () => {
          const repo = unique('acme/web');
          const body = releaseBody('facebook/react', 'v19.1.0');
          const url = `${ingress.url}/webhooks/github?repo=${encodeURIComponent(repo)}&from=19.0.0`;
          const a = await post(url, body, await githubHeaders(body, 'release', 'gh-1'));
          assert.equal(a.status, 202, JSON.stringify(a.json));
          assert.equal(a.json.decision, 'started');
          assert.equal(a.json.eventKey, `deps/release.published/${repo.replace('/', '%2F')}:react/2026-12-02T00:00:00Z`);
          const result = (await env.client.workflow.getHandle(a.json.runKey!).result()) as RunResult;
          assert.equal(result.terminalReason, 'success', result.summary);
          const again = await post(url, body, await githubHeaders(body, 'release', 'gh-2'));
          assert.equal(again.json.decision, 'completed');
          assert.equal(standins.pulls.pulls.filter((p) => p.repo === repo).length, 1);
          assert.equal(standins.pulls.pulls.find((p) => p.repo === repo)?.branch, 'bump/react-19.1.0');

          const pingBody = JSON.stringify({ zen: 'Keep it logically awesome.', hook_id: 1 });
          const ping = await post(`${ingress.url}/webhooks/github`, pingBody, await githubHeaders(pingBody, 'ping', 'gh-ping'));
          assert.equal(ping.status, 200);
          assert.equal(ping.json.ignored, true);
          const push = await post(url, pingBody, await githubHeaders(pingBody, 'push', 'gh-push'));
          assert.equal(push.status, 422);
          assert.equal(push.json.error?.code, 'not_a_trigger');
        },
        { activities },
      );
    } finally {
      await ingress.close();
    }
  });

  test('a burst at 5x the rate limit: the excess gets 429 with Retry-After, every accepted delivery runs', async () => {
    const taskQueue = unique('ingress-burst');
    const ingress = await startTestIngress(env, taskQueue, { ratePerSecond: 10, burst: 10 });
    try {
      await withWorker(
        env.nativeConnection,
        taskQueue,
        async () => {
          const repo = unique('acme/burst');
          const sent = 50; // 5x the 10-per-second limit, all at once
          const began = performance.now();
          const answers = await Promise.all(
            Array.from({ length: sent }, async (_, i) => {
              const body = releaseBody(`upstream/pkg-${i}`, 'v2.0.0');
              return post(
                `${ingress.url}/webhooks/github?repo=${encodeURIComponent(repo)}&from=1.0.0`,
                body,
                await githubHeaders(body, 'release', `burst-${i}`),
              );
            }),
          );
          const accepted = answers.filter((a) => a.status === 202);
          const shed = answers.filter((a) => a.status === 429);
          assert.equal(accepted.length + shed.length, sent, JSON.stringify(answers.filter((a) => a.status !== 202 && a.status !== 429)));
          // A token bucket of 10 refilling at 10/s: at most the burst plus what refilled while the 50 were being sent.
          const refilled = Math.ceil(((performance.now() - began) / 1000) * 10);
          assert.ok(accepted.length >= 10 && accepted.length <= 10 + refilled, `accepted ${accepted.length}, bound ${10 + refilled}`);
          for (const s of shed) {
            assert.ok(Number(s.retryAfter) >= 1, `Retry-After ${s.retryAfter}`);
            assert.equal(s.json.error?.code, 'shed');
          }
          for (const a of accepted) {
            assert.equal(a.json.decision, 'started');
            const result = (await env.client.workflow.getHandle(a.json.runKey!).result()) as RunResult;
            assert.equal(result.terminalReason, 'success', result.summary);
          }
          const metrics = await (await fetch(`${ingress.operatorUrl}/metrics`)).text();
          assert.match(metrics, new RegExp(`wakegate_ingress_shed_total\\{source="github",reason="rate_limit",policy="reject-newest"\\} ${shed.length}\\n`));
        },
        { activities },
      );
    } finally {
      await ingress.close();
    }
  });
});

describe('the operator’s paths are not on the public listener', () => {
  test('the halt a stranger sends with a hand-written Origin to the webhook port is a 404 and halts nothing; the operator listener serves the page, metrics and status', async () => {
    const taskQueue = unique('ingress-operator');
    const ingress = await startTestIngress(env, taskQueue);
    try {
      const publicUrl = new URL(ingress.url);
      const halt = await fetch(`${ingress.url}/supervisor/halt`, {
        method: 'POST',
        headers: { origin: publicUrl.origin, 'content-type': 'application/x-www-form-urlencoded' },
        body: 'who=stranger&reason=no+login+needed',
        redirect: 'manual',
      });
      assert.equal(halt.status, 404);
      for (const p of ['/supervisor', '/supervisor/reset', '/metrics', '/status']) {
        assert.equal((await fetch(`${ingress.url}${p}`)).status, 404, `${p} on the public listener`);
      }
      assert.deepEqual(await (await fetch(`${ingress.url}/healthz`)).json(), { ok: true });
      // Nothing was halted: a wake through the gate is not held.
      const a = await new Gate({ client: env.client, taskQueue, registry: registryOf() }).admit({
        source: 'ping',
        entity: unique('after-stranger'),
        type: 'check',
        occurredAt: new Date().toISOString(),
        payload: {},
      });
      assert.notEqual(a.decision, 'held');

      assert.notEqual(new URL(ingress.operatorUrl).port, publicUrl.port, 'two listeners');
      assert.equal(new URL(ingress.operatorUrl).hostname, '127.0.0.1');
      assert.equal((await fetch(`${ingress.operatorUrl}/supervisor`)).status, 200);
      assert.match(await (await fetch(`${ingress.operatorUrl}/metrics`)).text(), /wakegate_ingress/);
      assert.ok(Array.isArray(((await (await fetch(`${ingress.operatorUrl}/status`)).json()) as { sources: unknown[] }).sources));
      assert.equal((await fetch(`${ingress.operatorUrl}/webhooks/campaigns`, { method: 'POST' })).status, 404, 'and no webhooks on the operator listener');
    } finally {
      await ingress.close();
    }
  });

  test('the operator listener refuses to bind anywhere but loopback, saying how to reach it instead', async () => {
    await assert.rejects(startTestIngress(env, unique('ingress-operator-public'), { operatorHost: '0.0.0.0' }), /binds to loopback only.*SSH tunnel/);
  });
});
