import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { RunningIngress } from '../../src/processes/ingress-listeners';
import type { RunResult } from '../../src/core/run-types';
import { chromiumPath, launch, step } from '../helpers/browser';
import { eventually, useDevEnv, unique } from '../helpers/env';
import { startTestIngress } from '../helpers/ingress';
import { closeGates, startPager, supervisedGate, supervisedWorker, supervisorStatus, testPolicy, viewOf } from '../helpers/supervisor';

/*
 * The supervisor's status page (`/supervisor`, on the ingress's operator listener) in a real
 * browser: Debian's chromium through playwright-core. A storm trips the breaker; an operator signs
 * in; the page shows the trip, the counters and the held wakes; the operator resets the breaker
 * through the form (a blank reason is refused) and releases the held wakes through the other form,
 * each runs once, and the audit names the signed-in operator, not a typed name. Screenshots are
 * kept only on failure, in the temp dir.
 */

const env = useDevEnv();
let pager: Awaited<ReturnType<typeof startPager>>;
before(async () => {
  await env.ready();
  pager = await startPager();
});
after(async () => {
  await closeGates();
  await pager?.app.close();
});

const ping = (entity: string) => ({
  source: 'ping',
  entity,
  type: 'check',
  occurredAt: new Date(Date.now() - 30_000).toISOString(),
  payload: {},
  deliveryId: `${entity}-d`,
});

const ROBIN_SECRET = 'robin-secret-0123456789';

test('an operator signs in; the status page shows a trip, and a reset and a release made through its forms name the operator', async () => {
  chromiumPath();
  const taskQueue = unique('sup-page');
  const policy = testPolicy({ storm: { fleetPerMinute: 3, rationale: 'test: more than 3 wakes a minute is a storm' } });
  const w = await supervisedWorker(env.nativeConnection, taskQueue, { supervisor: policy, pager: pager.adapter });
  let ingress: RunningIngress | undefined;
  const browser = await launch();
  try {
    const gate = supervisedGate(env.client, taskQueue, policy);
    await Promise.all(Array.from({ length: 6 }, (_, i) => gate.admit(ping(unique(`storm-${i}`)))));
    await eventually(
      () => supervisorStatus(env.client, taskQueue),
      (s) => s?.mode === 'halted',
      15_000,
      'the trip',
    );
    await eventually(
      () => gate.supervisor.memo(0),
      (m) => m.mode === 'halted',
      5000,
      'the gate reading the halt',
    );
    const held = await Promise.all(Array.from({ length: 2 }, (_, i) => gate.admit(ping(unique(`held-${i}`)))));
    assert.deepEqual(
      held.map((a) => a.decision),
      ['held', 'held'],
    );
    const before = await eventually(
      () => viewOf(env.client, taskQueue),
      (v) => v.held.total >= 2 && v.live === 0,
      20_000,
      'held wakes listed',
    );

    ingress = await startTestIngress(env, taskQueue, { operatorAuth: { operators: { robin: ROBIN_SECRET }, sessionTtlS: 3600 } });
    const page = await browser.context.newPage();
    const url = `${ingress.operatorUrl}/supervisor`;
    await step(page, 'the page asks for a sign-in; a wrong secret is refused', async () => {
      await page.goto(url);
      await page.waitForURL(/\/login$/);
      await page.locator('input[name="name"]').fill('robin');
      await page.locator('input[name="secret"]').fill('not-robins-secret-at-all');
      await page.locator('form[data-form="login"] button').click();
      assert.match(await page.getByTestId('login-error').innerText(), /unknown operator or wrong secret/);
    });
    await step(page, 'robin signs in', async () => {
      await page.locator('input[name="name"]').fill('robin');
      await page.locator('input[name="secret"]').fill(ROBIN_SECRET);
      await page.locator('form[data-form="login"] button').click();
      await page.waitForURL(/\/supervisor$/);
      assert.equal(await page.getByTestId('operator').innerText(), 'robin');
      assert.equal(await page.locator('form[data-form="reset"] input[name="who"]').count(), 0, 'no name to type: the audit takes the sign-in');
    });
    await step(page, 'the page shows the trip', async () => {
      await page.goto(url);
      assert.equal(await page.getByTestId('mode').innerText(), 'halted');
      assert.match(await page.getByTestId('trip').innerText(), /Trip #1 \(storm\).*over the fleet threshold of 3/);
      assert.equal(await page.getByTestId('held-total').innerText(), String(before.held.total));
      assert.equal(await page.locator('tr[data-held^="canary|"]').count(), before.held.total);
      assert.match(await page.locator('tr[data-counter="wakes per minute|*"]').innerText(), /\/ 3/);
    });
    await step(page, 'the page draws the storm: wakes per minute against the threshold, and the window of each counter', async () => {
      const fleet = page.locator('svg[data-chart="storm"][data-scope="*"]');
      assert.equal(await fleet.getAttribute('data-threshold'), '3');
      const perMinute = await fleet.locator('rect[data-wakes]').evaluateAll((rects) => rects.map((r) => Number(r.getAttribute('data-wakes'))));
      assert.equal(perMinute.length, 10, 'the last ten minutes');
      const total = perMinute.reduce((a, b) => a + b, 0);
      assert.ok(total >= 6, `the storm's 6 wakes and the held ones are drawn (${total})`);
      assert.equal(await fleet.getAttribute('data-total'), String(total));
      const counter = page.locator('svg[data-chart="counter"][data-counter="wakes per minute|*"]');
      assert.equal(await counter.getAttribute('data-limit'), '3');
      const value = await counter.getAttribute('data-value');
      assert.match(
        await page.locator('tr[data-counter="wakes per minute|*"]').innerText(),
        new RegExp(`\\b${value} / 3\\b`),
        'the chart shows what the table says',
      );
      const buckets = await counter.locator('rect[data-amount]').evaluateAll((rects) => rects.map((r) => Number(r.getAttribute('data-amount'))));
      assert.equal(
        buckets.reduce((a, b) => a + b, 0),
        Number(value),
        "the window's buckets add up to the counter",
      );
    });
    await step(page, 'a reset without a real reason is refused', async () => {
      const form = page.locator('form[data-form="reset"]');
      await form.locator('input[name="reason"]').fill('   ');
      await form.locator('button').click();
      await page.waitForURL(/error=/);
      assert.match(await page.getByTestId('flash').innerText(), /refused: a name \(who\) and a reason are both required/);
      assert.equal(await page.getByTestId('mode').innerText(), 'halted');
    });
    await step(page, 'a reset through the form', async () => {
      const form = page.locator('form[data-form="reset"]');
      await form.locator('input[name="reason"]').fill('the webhook loop is fixed');
      await form.locator('button').click();
      await page.waitForURL(/ok=/);
      assert.match(await page.getByTestId('flash').innerText(), /reset by robin/);
      assert.equal(await page.getByTestId('mode').innerText(), 'armed');
      assert.match(await page.locator('tr[data-reset]').innerText(), /trip #1\s+robin\s+the webhook loop is fixed/);
      assert.equal(await page.getByTestId('held-total').innerText(), String(before.held.total), 'a reset releases nothing');
    });
    await step(page, 'a release through the form', async () => {
      const form = page.locator('form[data-form="release"]');
      await form.locator('input[name="reason"]').fill('replay what was held');
      await form.locator('select[name="action"]').selectOption('release');
      await form.locator('button').click();
      await page.waitForURL(/ok=/);
      assert.match(await page.getByTestId('flash').innerText(), /released all held wakes \(robin\)/);
    });
    const after = await eventually(
      () => viewOf(env.client, taskQueue),
      (v) => v.held.total === 0 && v.live === 0,
      30_000,
      'held wakes ran',
    );
    assert.equal(after.status?.releases.at(-1)?.who, 'robin');
    for (const a of held) {
      const result = (await env.client.workflow.getHandle(a.runKey).result()) as RunResult;
      assert.equal(result.terminalReason, 'success');
      assert.equal(result.held?.releasedBy?.who, 'robin');
    }
    await step(page, 'the page after the release: nothing held, the released runs among the recent successes', async () => {
      // The supervisor reads closed runs every observeEveryMs: reload until it has.
      await eventually(
        async () => {
          await page.goto(`${url}?at=${Date.now()}`);
          return {
            held: await page.getByTestId('held-total').innerText(),
            success: (await page.locator('tr[data-reason="success"]').count()) ? await page.locator('tr[data-reason="success"]').innerText() : '',
          };
        },
        (p) => p.held === '0' && Number(p.success.split(/\s+/)[1]) >= 2,
        15_000,
        'the page after the release',
      );
    });
    await step(page, 'robin halts through the form, and the audit names robin', async () => {
      const form = page.locator('form[data-form="halt"]');
      await form.locator('input[name="reason"]').fill('bad deploy, stop everything');
      await form.locator('button').click();
      await page.waitForURL(/ok=/);
      assert.match(await page.getByTestId('flash').innerText(), /halted \(robin\)/);
      assert.equal(await page.getByTestId('mode').innerText(), 'halted');
    });
    const halted = await supervisorStatus(env.client, taskQueue);
    assert.equal(halted?.trip?.kind, 'halt');
    assert.equal(halted?.trip?.by?.who, 'robin');
    // Without the session, the same post is refused before it reaches the supervisor, with or without a forged Origin.
    for (const origin of [new URL(url).origin, 'http://evil.example']) {
      const r = await fetch(`${url}/reset`, {
        method: 'POST',
        headers: { origin, 'content-type': 'application/x-www-form-urlencoded' },
        body: 'who=x&reason=y',
        redirect: 'manual',
      });
      assert.equal(r.status, 401, origin);
    }
    assert.equal((await supervisorStatus(env.client, taskQueue))?.mode, 'halted', 'nothing changed');
  } finally {
    await browser.close();
    await ingress?.close();
    await w.worker.shutdown();
    await w.running.catch(() => undefined);
  }
});
