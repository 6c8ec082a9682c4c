import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { ApplicationFailure } from '@temporalio/common';
import { pagerDutyPager, SUMMARY_MAX, type Page } from '../../src/supervisor/pager';
import { pagerService } from '../../tools/standins/pager';
import { FailureType } from '../../src/core/failures';

/* The PagerDuty Events API v2 adapter against the local stand-in of that API (real HTTP, no network). */

const fault: { status?: number; retryAfter?: string } = {};
const pd = pagerService({ log: () => undefined });
pd.app.addHook('onRequest', async (_req, reply) => {
  if (fault.status) {
    const status = fault.status;
    fault.status = undefined;
    if (fault.retryAfter) void reply.header('retry-after', fault.retryAfter);
    return reply.code(status).send({ status: 'error' });
  }
});
let url = '';
before(async () => {
  url = `${await pd.app.listen({ host: '127.0.0.1', port: 0 })}/v2/enqueue`;
});
after(() => pd.app.close());

const page = (over: Partial<Page> = {}): Page => ({
  dedupKey: 'wakegate/wakegate-supervisor/q/trip-1',
  summary: 'wakegate halted (trip #1, storm): 700 wakes in the last minute',
  severity: 'critical',
  source: 'wakegate supervisor (task queue q)',
  details: { tripId: 1, counters: { 'wakes per minute [*]': 700 }, howToReset: 'wakegate supervisor reset --who <you> --reason <why>' },
  ...over,
});
const pager = () => pagerDutyPager({ url, routingKey: 'R0UT1NGKEY0000000000000000000000', timeoutMs: 5000 });

test('a trigger goes out in the exact Events API v2 shape, details carried through', async () => {
  const receipt = await pager().send(page());
  assert.deepEqual(receipt, { dedupKey: 'wakegate/wakegate-supervisor/q/trip-1', status: 'success', message: 'Event processed' });
  const sent = pd.events.at(-1) as Record<string, unknown> & { payload: Record<string, unknown> };
  assert.equal(sent.routing_key, 'R0UT1NGKEY0000000000000000000000');
  assert.equal(sent.event_action, 'trigger');
  assert.equal(sent.dedup_key, 'wakegate/wakegate-supervisor/q/trip-1');
  assert.equal(sent.payload.severity, 'critical');
  assert.equal(sent.payload.component, 'wakegate-supervisor');
  assert.ok(!Number.isNaN(Date.parse(String(sent.payload.timestamp))));
  assert.deepEqual(sent.payload.custom_details, page().details);
});

test('the same dedup key twice (a retried send) is one incident', async () => {
  const p = page({ dedupKey: 'wakegate/x/trip-2' });
  await pager().send(p);
  await pager().send(p);
  const incidents = pd.incidents.filter((i) => i.dedupKey === 'wakegate/x/trip-2');
  assert.equal(incidents.length, 1);
  assert.equal(incidents[0]!.triggers, 2);
});

test('a summary over 1024 characters is truncated, not refused', async () => {
  await pager().send(page({ dedupKey: 'wakegate/x/long', summary: 'x'.repeat(3000) }));
  const incident = pd.incidents.find((i) => i.dedupKey === 'wakegate/x/long')!;
  assert.equal(incident.summary.length, SUMMARY_MAX);
});

test('refusals and outages are classified for Temporal retries', async () => {
  // An event PagerDuty refuses (here: an unknown severity): non-retryable, retrying cannot fix it.
  await assert.rejects(
    pager().send(page({ severity: 'loud' as never })),
    (err) => err instanceof ApplicationFailure && err.type === FailureType.ProviderRejected && err.nonRetryable,
  );
  fault.status = 500;
  await assert.rejects(pager().send(page()), (err) => !(err instanceof ApplicationFailure) && /500/.test((err as Error).message));
  fault.status = 429;
  fault.retryAfter = '7';
  await assert.rejects(pager().send(page()), (err) => err instanceof ApplicationFailure && err.type === FailureType.RateLimited && err.nextRetryDelay === 7000);
  fault.retryAfter = undefined;
});
