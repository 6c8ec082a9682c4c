import { test } from 'node:test';
import assert from 'node:assert/strict';
import { IngressMetrics } from '../../src/trigger/webhook/metrics';

/** The counter of events coalescers let go before their horizon, read as Prometheus exposes it. */
async function forgotten(m: IngressMetrics): Promise<Record<string, number>> {
  const metric = await m.forgottenEarly.get();
  return Object.fromEntries(metric.values.map((v) => [String(v.labels.agent), v.value]));
}

test('/metrics counts what coalescers let go early once, from the totals their answers carry', async () => {
  const m = new IngressMetrics();
  const wake = (agent: string, coalescerId: string, forgottenEarly?: number) => ({ agent, coalescerId, ...(forgottenEarly ? { forgottenEarly } : {}) });
  m.countForgotten([wake('notes', 'notes#a')]);
  assert.deepEqual(await forgotten(m), {}, 'nothing forgotten: nothing counted');
  m.countForgotten([wake('notes', 'notes#a', 40)]);
  m.countForgotten([wake('notes', 'notes#a', 40), wake('notes', 'notes#b', 5)]);
  m.countForgotten([wake('notes', 'notes#a', 52), wake('triage', 'triage#a', 3)]);
  // An answer that crossed a newer one carries an older total: it counts nothing.
  m.countForgotten([wake('notes', 'notes#a', 45)]);
  assert.deepEqual(await forgotten(m), { notes: 57, triage: 3 });
});
