import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { Redis } from 'ioredis';
import { RedisServer } from '../../tools/devserver/redis-server';
import { Gate } from '../../src/gate/gate';
import { awaitRun } from '../../src/run/await-run';
import { approveSignal, coalescerQuery, statusQuery } from '../../src/core/messages';
import { queueHandler } from '../../src/trigger/queue/handler';
import { publish, RedisStreamsConsumer } from '../../src/trigger/queue/redis-streams';
import type { RunningIngress } from '../../src/processes/ingress-listeners';
import type { Standins } from '../../tools/standins';
import type { WakeTrail } from '../../src/trail/types';
import { oneCallAgents, quickAgents } from '../helpers/agents';
import { activitiesOf, exampleAgents, registryOf } from '../helpers/app';
import { launch, step } from '../helpers/browser';
import { runCli } from '../helpers/cli';
import { eventually, useDevEnv, unique, withWorker } from '../helpers/env';
import { campaignBody, post, standardHeaders, startTestIngress } from '../helpers/ingress';
import { standinOutside, startOutside } from '../helpers/outside';
import { createSchedule, testSchedule } from '../helpers/schedules';

/*
 * `wakegate explain` and the `/wakes/<agent>/<wakeKey>` page against the seed's incident, on a real
 * dev server: a campaign woken at once by its Schedule's window, a signed webhook and a Redis queue
 * message (three directions, one coalesced run, two effects, one approval), then a late older
 * version of the change (stale). The CLI runs as a subprocess; the page is opened in Debian's
 * chromium and its screenshot kept under .wakegate/artifacts/.
 */

const ARTIFACTS = path.resolve(__dirname, '..', '..', '.wakegate', 'artifacts');

const env = useDevEnv();
let standins: Standins;
let broker: RedisServer;
let redis: Redis;
before(async () => {
  await env.ready();
  ({ standins } = await startOutside());
  broker = await RedisServer.start();
  redis = new Redis(broker.url);
});
after(async () => {
  redis?.disconnect();
  await broker?.stop();
  await standins?.close();
});

const ingressGate = (taskQueue: string) => new Gate({ client: env.client, taskQueue, registry: registryOf(oneCallAgents()) });
const cliEnv = (taskQueue: string) => ({ TEMPORAL_ADDRESS: env.server.address, WAKEGATE_TASK_QUEUE: taskQueue });

/** The seed's incident plus a late older version, through the ingress and the queue consumer; returns the run and the queue message's id. */
async function incident(taskQueue: string, campaign: string, ingress: RunningIngress): Promise<{ runKey: string; queueId: string }> {
  const def = testSchedule({
    agent: 'campaign-reporter',
    payload: { campaignId: campaign, dashboards: ['spend'] },
    // Fired by hand (trigger): a spec that cannot fire on its own while the test runs (every 1h did, at the top of an hour).
    spec: { cron: ['0 0 1 1 *'] },
    overlap: 'skip',
    catchUp: 'latest',
  });
  await createSchedule(env.client, def, taskQueue);
  const url = `${ingress.url}/webhooks/campaigns`;
  const change = campaignBody(campaign, { version: 8, dashboards: ['reach'] });
  // Three directions at once: the Schedule's window, a signed webhook, a queue message.
  const [, hook, queueId] = await Promise.all([
    env.client.schedule.getHandle(def.id).trigger(),
    post(url, change, standardHeaders(change, 'hook-a')),
    publish(redis, { source: 'campaigns', entity: campaign, type: 'report.due', occurredAt: '2026-12-02T14:06:00Z', payload: {} }),
  ]);
  assert.equal(hook.status, 202, JSON.stringify(hook.json));
  const runKey = hook.json.runKey!;
  await eventually(
    () =>
      env.client.workflow
        .getHandle(`campaign-reporter#${campaign}`)
        .query(coalescerQuery)
        .catch(() => undefined),
    (q) => (q?.state.pending?.events.length ?? 0) + (q?.state.running?.events.length ?? 0) === 3,
    20_000,
    'the three wakes in one batch',
  );
  // A late delivery of an older version of the change: stale.
  const older = campaignBody(campaign, { version: 6, occurredAt: '2026-12-02T14:01:00Z' });
  const late = await post(url, older, standardHeaders(older, 'hook-old'));
  assert.equal(late.json.decision, 'stale', JSON.stringify(late.json));
  const waiting = await eventually(
    () =>
      env.client.workflow
        .getHandle(runKey)
        .query(statusQuery)
        .catch(() => undefined),
    (s) => s?.awaitingApproval !== undefined,
    60_000,
    'the export waiting for approval',
  );
  await env.client.workflow.getHandle(runKey).signal(approveSignal, { who: 'ana', reason: 'checked', effectKey: waiting!.awaitingApproval!.effectKey });
  const result = await awaitRun(env.client, { runKey: runKey, decision: 'coalesced', agent: 'campaign-reporter', wakeKey: campaign });
  assert.equal(result.terminalReason, 'success', result.summary);
  await env.client.schedule.getHandle(def.id).delete();
  return { runKey, queueId };
}

describe('the decision trail of a wake key', () => {
  test("the seed's incident and a stale event: explain lists the events with their decisions, the one run and its effects; the page draws them", async (t) => {
    const taskQueue = unique('explain');
    const campaign = unique('spring');
    const agents = quickAgents({ debouncePeriodMs: 4000, maxWaitMs: 20_000 });
    const ingress = await startTestIngress(env, taskQueue, {}, agents);
    const gate = new Gate({ client: env.client, taskQueue, registry: registryOf(agents) });
    const consumer = new RedisStreamsConsumer({ redis, sources: ['campaigns'], claimIdleMs: 30_000, batch: 8, blockMs: 200 });
    const consuming = consumer.run(queueHandler({ gate, client: env.client, temporalTimeoutMs: 5000, maxAttempts: 5 }));
    try {
      const { runKey, queueId } = await withWorker(env.nativeConnection, taskQueue, () => incident(taskQueue, campaign, ingress), {
        activities: activitiesOf({ agents, outside: standinOutside(standins) }),
      });

      const cli = await runCli(['explain', 'campaign-reporter', campaign], cliEnv(taskQueue));
      assert.equal(cli.code, 0, cli.stderr);
      const trail = cli.json as unknown as WakeTrail;
      assert.equal(trail.path, 'coalescing');
      const bySource = (source: string, type: string) => trail.events.filter((e) => e.source === source && e.type === type);
      const [tick] = bySource('schedule', 'tick');
      const [queued] = bySource('campaigns', 'report.due');
      const changes = bySource('campaigns', 'config.changed');
      assert.equal(trail.events.length, 4, JSON.stringify({ events: trail.events.map((e) => [e.eventKey, e.decision]), looked: trail.looked }, null, 1));
      for (const e of [tick!, queued!, changes.find((c) => c.version === 8)!]) {
        assert.ok(['started', 'coalesced'].includes(e.decision), `${e.eventKey}: ${e.decision}`);
        assert.equal(e.runKey, runKey);
        assert.ok(e.arrivedAt, `${e.eventKey} arrived`);
      }
      assert.equal(trail.events.filter((e) => e.decision === 'started').length, 1, 'one event opened the batch');
      const stale = changes.find((c) => c.version === 6)!;
      assert.equal(stale.decision, 'stale');
      assert.equal(stale.newestVersion, 8);
      assert.match(stale.reason, /behind version 8/);
      // Every direction's delivery is named: the webhook's id, the queue message's, the tick's workflow.
      assert.ok(changes.find((c) => c.version === 8)!.deliveryIds.includes('hook-a'), 'the webhook delivery');
      assert.deepEqual(queued!.deliveryIds, [`queue:campaigns:${queueId}`]);
      assert.match(tick!.deliveryIds[0] ?? '', /^wakegate-tick\//);

      assert.equal(trail.runs.length, 1);
      const [run] = trail.runs;
      assert.equal(run!.runKey, runKey);
      assert.equal(run!.terminalReason, 'success');
      assert.equal(run!.absorbed.length, 3);
      assert.ok(run!.modelTurns >= 2 && run!.toolCalls >= 2, `turns ${run!.modelTurns}, tool calls ${run!.toolCalls}`);
      assert.ok(run!.usage && run!.usage.tokens > 0 && run!.budget?.turns === 6, `usage ${JSON.stringify(run!.usage)}, budget ${JSON.stringify(run!.budget)}`);
      assert.deepEqual(
        run!.effects.map((f) => [f.effect, f.class, f.outcome, f.approval.decision ?? null]),
        [
          ['post_summary', 'provider_key', 'applied', null],
          ['start_export', 'reconcile', 'applied', 'approved'],
        ],
      );
      assert.equal(run!.effects[1]!.approval.who, 'ana');
      for (const f of run!.effects) assert.match(f.argsDigest ?? '', /^[0-9a-f]{16}$/);

      const browser = await launch();
      try {
        const page = await browser.context.newPage();
        const url = `${ingress.operatorUrl}/wakes/campaign-reporter/${encodeURIComponent(campaign)}`;
        const res = await page.goto(url);
        assert.equal(res?.status(), 200);
        await step(page, 'the timeline', async () => {
          const svg = page.getByTestId('timeline');
          await svg.waitFor();
          assert.equal(await svg.locator('g.event').count(), 4);
          assert.equal(await svg.locator('g.event[data-decision="stale"]').count(), 1);
          assert.equal(await svg.locator('g.run').count(), 1);
          assert.deepEqual(await svg.locator('g.effect').evaluateAll((gs) => gs.map((g) => g.getAttribute('data-outcome'))), ['applied', 'applied']);
          assert.equal(await page.locator(`[data-testid="events"] td[data-decision="stale"]`).count(), 1);
          assert.match((await page.getByTestId('runs').textContent()) ?? '', /start_export.*approved by ana/s);
        });
        mkdirSync(ARTIFACTS, { recursive: true });
        const shot = path.join(ARTIFACTS, `explain-${campaign}.png`);
        await page.screenshot({ path: shot, fullPage: true });
        t.diagnostic(`screenshot: ${shot}`);
      } finally {
        await browser.close();
      }
    } finally {
      await consumer.stop();
      await consuming;
      await ingress.close();
      await gate.close();
    }
  });

  test('an unknown agent is refused naming the known ones (exit 2, HTTP 404); a wake key with nothing recorded says where it looked (exit 3, a 404 page); the page needs a sign-in', async () => {
    const taskQueue = unique('explain-empty');
    // The example agents as they are: the reporter coalesces, so its coalescer is looked for too.
    const ingress = await startTestIngress(env, taskQueue, {}, exampleAgents);
    try {
      const unknown = await runCli(['explain', 'nobody', 'anything'], cliEnv(taskQueue));
      assert.equal(unknown.code, 2, unknown.stderr);
      assert.equal((unknown.json.error as { code: string }).code, 'unknown_agent');
      assert.match((unknown.json.error as { message: string }).message, /no agent "nobody".*campaign-reporter, canary, dependency-bump/);
      const badSince = await runCli(['explain', 'canary', 'anything', '--since', 'yesterday'], cliEnv(taskQueue));
      assert.equal(badSince.code, 2);
      assert.equal((badSince.json.error as { code: string }).code, 'usage');

      const key = unique('never-woken');
      const empty = await runCli(['explain', 'campaign-reporter', key, '--since', '2h'], cliEnv(taskQueue));
      assert.equal(empty.code, 3, empty.stderr);
      const trail = empty.json as unknown as WakeTrail & { error: { code: string } };
      assert.equal(trail.found, false);
      assert.equal(trail.error.code, 'not_found');
      assert.deepEqual([trail.events, trail.runs], [[], []]);
      assert.ok(
        trail.looked.some((l) => l.startsWith('visibility: ') && l.includes(`WakeKey = "${key}"`)),
        trail.looked.join('\n'),
      );
      assert.ok(
        trail.looked.some((l) => l.includes(`coalescer campaign-reporter#${key}: none found`)),
        trail.looked.join('\n'),
      );
      assert.match(empty.stderr, /nothing is recorded about campaign-reporter \/ .* since .*looked at: visibility/);

      const page404 = await fetch(`${ingress.operatorUrl}/wakes/nobody/anything`);
      assert.equal(page404.status, 404);
      assert.match(await page404.text(), /no agent &quot;nobody&quot;.*campaign-reporter, canary, dependency-bump/);
      const nothing = await fetch(`${ingress.operatorUrl}/wakes/campaign-reporter/${encodeURIComponent(key)}?since=2h`);
      assert.equal(nothing.status, 404);
      const html = await nothing.text();
      assert.match(html, /Nothing is recorded about this wake key since/);
      assert.match(html, /visibility: WorkflowType = &quot;runWorkflow&quot;/);
      assert.match(html, new RegExp(`coalescer campaign-reporter#${key}: none found`));
      assert.equal((await fetch(`${ingress.operatorUrl}/wakes/canary/x?since=nonsense`)).status, 400);
      // Any printable wake key is a page: both quote characters, or a trailing backslash, are queried escaped (never a 500).
      for (const odd of [`it's "${key}"`, `${key}\\`, `${key}\\"'`]) {
        const r = await fetch(`${ingress.operatorUrl}/wakes/campaign-reporter/${encodeURIComponent(odd)}?since=2h`);
        assert.equal(r.status, 404, odd);
        assert.match(await r.text(), /Nothing is recorded about this wake key since/, odd);
      }
      assert.equal((await fetch(`${ingress.url}/wakes/canary/x`)).status, 404, 'not on the public listener');
    } finally {
      await ingress.close();
    }
    // Behind the operators' sign-in like /supervisor: nothing is read for a request that acts as no one.
    const secret = 'robin-secret-0123456789';
    const guarded = await startTestIngress(env, taskQueue, { operatorAuth: { operators: { robin: secret }, sessionTtlS: 3600 } }, exampleAgents);
    try {
      assert.equal((await fetch(`${guarded.operatorUrl}/wakes/canary/x`)).status, 401);
      const basic = { authorization: `Basic ${Buffer.from(`robin:${secret}`).toString('base64')}` };
      assert.equal((await fetch(`${guarded.operatorUrl}/wakes/canary/${unique('x')}`, { headers: basic })).status, 404, 'signed in: nothing recorded');
    } finally {
      await guarded.close();
    }
  });

  test('an event key, a delivery id and a payload carrying markup are shown as text on the page, never run', async () => {
    const taskQueue = unique('explain-escape');
    const ingress = await startTestIngress(env, taskQueue);
    const entity = `<script>window.pwned=1</script> ${unique('x')}`;
    try {
      await withWorker(env.nativeConnection, taskQueue, async () => {
        const answer = await ingressGate(taskQueue).admit({
          source: 'ping',
          entity,
          type: '<img src=x onerror="window.pwned=2">',
          occurredAt: new Date(Date.now() - 60_000).toISOString(),
          payload: { note: '<script>window.pwned=3</script>' },
          deliveryId: '<b>delivery</b>',
        });
        assert.equal((await awaitRun(env.client, answer)).terminalReason, 'success');
      });
      const url = `${ingress.operatorUrl}/wakes/canary/${encodeURIComponent(entity)}`;
      const res = await fetch(url);
      assert.equal(res.status, 200);
      const html = await res.text();
      assert.ok(!html.includes('<script>') && !html.includes('<img') && !html.includes('<b>delivery'), 'no markup from the event reaches the page unescaped');
      assert.ok(html.includes('&lt;script&gt;window.pwned=1&lt;/script&gt;'), 'the entity shown, escaped');
      const browser = await launch();
      try {
        const page = await browser.context.newPage();
        await page.goto(url);
        await step(page, 'the markup shown as text', async () => {
          assert.equal(await page.evaluate(() => (globalThis as { pwned?: number }).pwned), undefined);
          const row = page.locator('[data-testid="events"] tbody tr');
          assert.equal(await row.count(), 1);
          const text = (await row.textContent()) ?? '';
          for (const shown of ['<script>window.pwned=1</script>', '<img src=x onerror="window.pwned=2">', '<b>delivery</b>'])
            assert.ok(text.includes(shown), `${shown} in ${text}`);
          assert.match((await page.getByTestId('timeline').locator('g.event text').first().textContent()) ?? '', /<img src=x/);
        });
      } finally {
        await browser.close();
      }
    } finally {
      await ingress.close();
    }
  });
});
