import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Client } from '@temporalio/client';
import type { LeaseAnswer, LeaseRequest, UnusedPermits } from '../../src/core/permit-types';
import type { SupervisorMemo, SupervisorPolicy } from '../../src/core/supervisor-types';
import { SupervisorLink } from '../../src/supervisor/link';
import { PermitLeaser } from '../../src/supervisor/permit-leaser';
import { PermitStock } from '../../src/supervisor/permit-stock';
import { start, transition, type MachineState } from '../../workflows/supervisor/machine';

/*
 * Permits leased ahead of demand and kept in a worker process's stock: a run may start on one up to
 * its hold after the supervisor counted it. These prove that no span of a cap's window holds more
 * starts than the cap however the stock is used, and that a permit leased before a trip does not
 * start a run once the process has heard of the trip.
 */

const T0 = Date.parse('2026-12-01T00:00:00.000Z');
const W = 60_000;
const CAP = 20;
const HOLD = 2_000;

function policy(): SupervisorPolicy {
  return {
    storm: { fleetPerMinute: 1_000_000, rationale: 'test' },
    errorRate: { windowMs: 60_000, minRuns: 4, threshold: 0.5, reasons: ['failed'], rationale: 'test' },
    caps: { fleet: [{ windowMs: W, wakes: CAP, rationale: 'test' }], agents: {} },
    onTrip: {},
    overCap: {},
    observeEveryMs: 500,
    holdRecheckMs: 1000,
  };
}

/** The most starts any span of `windowMs` holds. */
function busiestSpan(starts: number[], windowMs: number): number {
  const sorted = [...starts].sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (sorted[i]! - sorted[j]! >= windowMs) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}

test('busiestSpan counts the starts of the fullest half-open span', () => {
  assert.equal(busiestSpan([0, 59_999, 60_000, 60_001], 60_000), 3);
  assert.equal(busiestSpan([], 60_000), 0);
});

test('runs started on stocked permits near the end of their hold and runs granted as the window slides never exceed the cap in any span', () => {
  let m: MachineState = start({ taskQueue: 'q', policy: policy() }, T0);
  const stock = new PermitStock({ demandWindowMs: HOLD, maxPrefetch: 64 });
  const starts: number[] = [];
  const lease = (req: LeaseRequest, ms: number): LeaseAnswer => {
    const s = transition(m, { kind: 'lease', ...req }, T0 + ms);
    m = s.state;
    return s.reply;
  };
  // At 0 s a process fills its stock: each lease starts one run now and stocks what it prefetched.
  for (let i = 0; i < 10; i++) {
    const a = lease({ requests: { canary: 1 }, prefetch: { canary: 64 }, holder: 'p1', holdMs: HOLD }, 0);
    for (let k = 0; k < a.grants.canary!; k++) starts.push(0);
    if (a.prefetched?.canary) stock.add('canary', a.prefetched.canary, a.atMs!, 0, HOLD);
  }
  const stocked = stock.size('canary', 0);
  assert.ok(stocked > 0, 'the stock holds permits');
  // Its runs arrive just before the hold ends and start on the stock.
  while (stock.take('canary', HOLD - 100)) starts.push(HOLD - 100);
  assert.equal(starts.length, CAP, 'the whole cap is handed out at first');
  // The window slides: from 60 s on, runs keep asking, five every 100 ms.
  for (let ms = W; ms <= W + 10_000; ms += 100) {
    for (let k = lease({ requests: { canary: 5 } }, ms).grants.canary!; k > 0; k--) starts.push(ms);
  }
  assert.ok(starts.length > CAP, 'the window did slide: more runs started');
  assert.ok(busiestSpan(starts, W) <= CAP, `a span of ${W} ms holds ${busiestSpan(starts, W)} starts, over the cap of ${CAP}`);
});

test('a returned block is taken out of the window where it was counted', () => {
  let m: MachineState = start({ taskQueue: 'q', policy: policy() }, T0);
  const s = transition(m, { kind: 'lease', requests: { canary: 1 }, prefetch: { canary: 64 }, holder: 'p1', holdMs: HOLD }, T0);
  m = s.state;
  const n = s.reply.prefetched!.canary!;
  m = transition(m, { kind: 'unused', holder: 'p1', blocks: [{ agent: 'canary', atMs: s.reply.atMs!, n }] }, T0 + HOLD).state;
  const again = transition(m, { kind: 'lease', requests: { canary: CAP - 1 } }, T0 + HOLD + 1);
  assert.equal(again.reply.grants.canary, CAP - 1, 'the room the return made is granted again');
});

/** A client whose supervisor answers `lease` updates as the test says, takes returns, and shows `memo()` in its memo. */
function fakeClient(answer: (req: LeaseRequest) => Promise<LeaseAnswer>, returns: UnusedPermits[], memo: () => SupervisorMemo = () => ARMED): Client {
  const handle = {
    executeUpdate: (_def: unknown, opts: { args: [LeaseRequest] }) => answer(opts.args[0]),
    signal: (_def: unknown, arg: UnusedPermits) => {
      returns.push(arg);
      return Promise.resolve();
    },
    describe: () => Promise.resolve({ memo: { supervisor: memo() } }),
  };
  return {
    connection: {},
    options: { namespace: 'default' },
    withDeadline: <T>(_deadline: number, fn: () => Promise<T>) => fn(),
    workflow: { getHandle: () => handle },
  } as unknown as Client;
}

const ARMED: SupervisorMemo = { mode: 'armed', capsFull: [], releases: [] };
const HALTED: SupervisorMemo = { mode: 'halted', tripId: 1, tripReason: 'halted by ann: test', capsFull: [], releases: [] };

// The leaser's timers do not hold the process open (unref): this does, while the tests wait on them.
let alive: NodeJS.Timeout;
before(() => (alive = setInterval(() => undefined, 1000)));
after(() => clearInterval(alive));

const until = async (what: () => boolean): Promise<void> => {
  for (let i = 0; i < 200 && !what(); i++) await new Promise((r) => setTimeout(r, 5));
  assert.ok(what(), 'timed out waiting');
};

test("a stocked permit's hold is timed from when the lease was asked for, not from when its answer came", async () => {
  let clock = T0;
  const client = fakeClient(async (req) => {
    const asked = clock;
    // The answer takes 1.5 s to come back; the supervisor counted the block when it was asked for.
    clock += 1500;
    const n = req.requests.canary!;
    return req.prefetch ? { grants: { canary: n }, mode: 'armed', prefetched: { canary: 10 }, atMs: asked } : { grants: { canary: n }, mode: 'armed' };
  }, []);
  const leaser = new PermitLeaser({ client, workflowId: 'w', policy: policy(), gatherMs: 1, holdMs: HOLD, ensure: async () => {}, now: () => clock });
  try {
    for (let i = 0; i < 12; i++) leaser['stock'].noteDemand('canary', clock);
    const asked = clock;
    assert.equal((await leaser.lease('canary')).granted, true);
    assert.ok(leaser['stock'].size('canary', clock) > 0, 'the answer brought a block into stock');
    clock = asked + HOLD;
    const late = leaser.lease('canary');
    assert.equal(leaser.stats.fromStock, 0, `no run starts on the block ${HOLD} ms after the ask: the supervisor counted it for that hold`);
    assert.equal((await late).granted, true, 'it leases afresh');
  } finally {
    await leaser.close();
  }
});

test('a block whose answer arrives after the process read a halt is handed back, and no run starts on it', async () => {
  let memo = ARMED;
  const returns: UnusedPermits[] = [];
  let answerLate!: () => void;
  const late = new Promise<void>((r) => (answerLate = r));
  let calls = 0;
  const client = fakeClient(
    async (req) => {
      calls++;
      if (calls === 1) await late; // decided before the halt, answered after the process read it
      const n = req.requests.canary!;
      if (memo.mode !== 'armed' && calls > 1) return { grants: { canary: 0 }, mode: memo.mode };
      return { grants: { canary: n }, mode: 'armed', prefetched: { canary: 8 }, atMs: T0 };
    },
    returns,
    () => memo,
  );
  const link = new SupervisorLink({ client, taskQueue: 'q', policy: policy(), leaseGatherMs: 1, leaseTtlMs: HOLD });
  const stock = () => link['permits']['stock'] as PermitStock;
  try {
    for (let i = 0; i < 12; i++) stock().noteDemand('canary', Date.now());
    const pending = link.lease('canary');
    await until(() => calls === 1);
    memo = HALTED;
    assert.equal((await link.memo(0, { wait: true })).mode, 'halted');
    answerLate();
    assert.equal((await pending).granted, true, 'the run that asked before the halt is answered as the supervisor decided then');
    assert.equal(stock().size('canary', Date.now()), 0, 'nothing of that answer is kept in stock');
    await until(() => returns.some((r) => r.blocks.some((b) => b.n === 8)));
    assert.deepEqual(await link.lease('canary'), { granted: false, mode: 'halted' }, 'a run asking after the halt is told so by the supervisor');
    assert.equal(link.stats.fromStock, 0);
  } finally {
    await link.close();
  }
});

test('a stocked permit carries the mode the process last read; while that is not armed, the supervisor is asked', async () => {
  let memo = ARMED;
  const returns: UnusedPermits[] = [];
  const client = fakeClient(
    async (req) =>
      memo.mode === 'armed'
        ? { grants: { canary: req.requests.canary! }, mode: 'armed', prefetched: { canary: 8 }, atMs: T0 }
        : { grants: { canary: 0 }, mode: memo.mode },
    returns,
    () => memo,
  );
  const link = new SupervisorLink({ client, taskQueue: 'q', policy: policy(), leaseGatherMs: 1, leaseTtlMs: HOLD });
  const stock = () => link['permits']['stock'] as PermitStock;
  try {
    for (let i = 0; i < 12; i++) stock().noteDemand('canary', Date.now());
    await link.lease('canary');
    assert.deepEqual(await link.lease('canary'), { granted: true, mode: 'armed' }, 'armed: from stock');
    assert.equal(link.stats.fromStock, 1);
    memo = HALTED;
    await link.memo(0, { wait: true });
    assert.equal(stock().size('canary', Date.now()), 0, 'the stock went back');
    assert.deepEqual(await link.lease('canary'), { granted: false, mode: 'halted' });
    assert.deepEqual(await link.runVerdict('canary'), {
      kind: 'hold',
      hold: 'halted',
      reason: 'the supervisor is halted (trip #1: halted by ann: test); a person resets it and releases held wakes',
      recheckMs: 1000,
    });
    await until(() => returns.length > 0);
  } finally {
    await link.close();
  }
});
