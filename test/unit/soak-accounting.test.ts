import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { account, type OutsideState, type RunSeen } from '../../soak/accounting';
import type { Delivery } from '../../soak/load';
import type { FaultRecord } from '../../soak/faults';

/*
 * The soak's accounting (soak/accounting.ts) judges the system from what the senders were told, the
 * runs Temporal holds and the effects at the stand-ins. Its rules are proven here on made-up inputs,
 * each finding both ways: a clean day reports nothing, and each defect is named by its event key.
 */

const T0 = Date.parse('2026-12-05T03:00:00Z');

function webhook(id: string, eventKey: string, wakes: { decision: string; workflowId: string }[], status = 202, t = T0): Delivery {
  return {
    id,
    kind: 'webhook',
    what: 'campaigns',
    attempts: [{ t, ingress: 'http://127.0.0.1:1', status, retryAfter: null }],
    status,
    eventKey,
    wakes: wakes.map((w) => ({ agent: 'campaign-reporter', ...w })),
  };
}

function queued(id: string, eventKey: string): Delivery {
  return { id, kind: 'queue', what: 'incidents', attempts: [], status: 200, eventKey, coalescerIds: ['incident-triage#svc-q1'] };
}

function run(workflowId: string, absorbed: string[], extra: Partial<RunSeen> = {}): RunSeen {
  return { workflowId, agent: 'campaign-reporter', status: 'COMPLETED', terminalReason: 'success', wakeKey: 'c1', absorbed, skipped: [], ...extra };
}

const NOTHING_OUTSIDE: OutsideState = { exports: [], tickets: [], channel: [], pulls: [] };

function judge(over: { deliveries: Delivery[]; closed: RunSeen[]; open?: string[]; outside?: OutsideState; faults?: FaultRecord[] }) {
  return account({
    deliveries: over.deliveries,
    queueUnacked: 0,
    runs: { closed: over.closed, open: over.open ?? [] },
    outside: over.outside ?? { ...NOTHING_OUTSIDE, exports: [{ reference: 'r1', campaign: 'c1' }] },
    faults: over.faults ?? [],
  });
}

describe('soak accounting', () => {
  test('a clean day: every accepted event in one run, effects once, invalid input refused', () => {
    const a = judge({
      deliveries: [
        webhook('w1', 'e1', [{ decision: 'started', workflowId: 'run-1' }]),
        webhook('w1-replay', 'e1', [{ decision: 'coalesced', workflowId: 'run-1' }]),
        queued('q1', 'e2'),
        { id: 'bad', kind: 'invalid', what: 'bad signature', attempts: [], status: 401 },
      ],
      closed: [run('run-1', ['e1', 'e2'])],
    });
    assert.deepEqual(
      [a.lost, a.doubleAbsorbed, a.answersNamingTwoRuns, a.duplicateEffects, a.reconcileMismatch, a.stuckRuns, a.invalidAccepted],
      [[], [], [], [], [], [], []],
    );
    assert.equal(a.accepted, 3);
    assert.equal(a.runs, 1);
  });

  test('an accepted event no run took is lost, named by its key', () => {
    const a = judge({ deliveries: [webhook('w1', 'e1', [{ decision: 'started', workflowId: 'run-1' }]), queued('q9', 'e9')], closed: [run('run-1', ['e1'])] });
    assert.deepEqual(a.lost, ['e9']);
  });

  test('a queue event skipped by a live run is recorded on that run, not lost', () => {
    // whileRunning `skip`: the coalescer answers `skipped` and the live run lists the event in `skipped`.
    const a = judge({ deliveries: [queued('q1', 'e1')], closed: [run('run-1', [], { skipped: ['e1'] })] });
    assert.deepEqual(a.lost, []);
  });

  test('an event decided stale is decided elsewhere, not lost', () => {
    const a = judge({ deliveries: [webhook('w1', 'e1', [{ decision: 'stale', workflowId: 'c#1' }])], closed: [] });
    assert.deepEqual(a.lost, []);
  });

  test('an event taken by two runs of one agent, and deliveries told of two runs, are named', () => {
    const a = judge({
      deliveries: [webhook('w1', 'e1', [{ decision: 'started', workflowId: 'run-1' }]), webhook('w2', 'e1', [{ decision: 'started', workflowId: 'run-2' }])],
      closed: [run('run-1', ['e1']), run('run-2', ['e1'], { terminalReason: 'failed' })],
    });
    assert.deepEqual(a.doubleAbsorbed, ['campaign-reporter|e1 in run-1, run-2']);
    assert.deepEqual(a.answersNamingTwoRuns, ['campaign-reporter|e1: run-1, run-2']);
  });

  test('a keyed effect applied twice, and a reconcile effect not once per successful report', () => {
    const a = judge({
      deliveries: [webhook('w1', 'e1', [{ decision: 'started', workflowId: 'run-1' }])],
      closed: [run('run-1', ['e1'])],
      outside: {
        exports: [
          { reference: 'r1', campaign: 'c1' },
          { reference: 'r2', campaign: 'c1' },
        ],
        tickets: [],
        channel: [{ idempotencyKey: 'k1' }, { idempotencyKey: 'k1' }],
        pulls: [],
      },
    });
    assert.deepEqual(a.duplicateEffects, ['channel post k1 x2']);
    assert.deepEqual(a.reconcileMismatch, ['c1: 1 successful reports, 2 exports']);
  });

  test('a run still open after the drain is stuck; accepted invalid input is named', () => {
    const a = judge({
      deliveries: [{ id: 'bad', kind: 'invalid', what: 'oversized body', attempts: [], status: 202 }],
      closed: [],
      open: ['run-7'],
      outside: NOTHING_OUTSIDE,
    });
    assert.deepEqual(a.stuckRuns, ['run-7']);
    assert.deepEqual(a.invalidAccepted, ['bad (oversized body): 202']);
  });

  test('a 5xx is explained only inside a restart window, and must carry Retry-After', () => {
    const restart: FaultRecord = { kind: 'temporal-restart', target: 'temporal', from: T0, to: T0 + 5_000 };
    const inWindow = webhook('w1', 'e1', [{ decision: 'started', workflowId: 'run-1' }]);
    inWindow.attempts = [{ t: T0 + 2_000, ingress: 'i1', status: 503, retryAfter: '1' }, ...inWindow.attempts];
    const outside = webhook('w2', 'e2', [{ decision: 'started', workflowId: 'run-2' }]);
    outside.attempts = [{ t: T0 + 120_000, ingress: 'i2', status: 500, retryAfter: null }, ...outside.attempts];
    const a = judge({ deliveries: [inWindow, outside], closed: [run('run-1', ['e1']), run('run-2', ['e2'])], faults: [restart] });
    assert.equal(a.fiveXx, 2);
    assert.deepEqual(a.unexplained5xx, [`w2 500 at ${new Date(T0 + 120_000).toISOString()} via i2`]);
    assert.deepEqual(a.fiveXxWithoutRetryAfter, ['w2 500']);
  });
});
