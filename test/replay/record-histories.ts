/**
 * Re-record the committed histories the replay test runs over: `node --import tsx test/replay/record-histories.ts`
 * records them all; name groups to record only those (`wake`, `coalesce`, `schedules`, `direct`, `supervisor`, `cancel`, `stops`, `pages`, `caps`, `drain`, `held-can`, `rollout`).
 * Do this only on purpose (a deliberate, patched change to workflow code); the replay test exists to
 * catch an accidental one.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { approveSignal, killUpdate, statusQuery } from '../../src/core/messages';
import { holdNudgeSignal, wakesSignal } from '../../src/core/supervisor-messages';
import { supervisorId } from '../../src/core/ids';
import { cadenceQuery, fixedDelayWorkflowId, gapsQuery, ledgerWorkflowId } from '../../src/core/schedule-messages';
import type { FixedDelayInput } from '../../src/core/schedule-types';
import type { RunStatus } from '../../src/core/run-types';
import { eventually, startDevEnv, unique, withWorker } from '../helpers/env';
import { createSchedule, testSchedule, ticksOf } from '../helpers/schedules';
import { standinOutside, startOutside, startWake, wakeInput } from '../helpers/outside';
import { coalescing } from '../helpers/agents';
import { Gate } from '../../src/gate/gate';
import { awaitRun } from '../../src/run/await-run';
import { actOnSupervisor } from '../../src/supervisor/actions';
import { pokeUntilContinued, supervisedGate, supervisorHandle, supervisorStatus, testPolicy, viewOf } from '../helpers/supervisor';
import { deferred } from '../helpers/worker-process';
import { channelService } from '../../tools/standins/channel';
import { ApplicationFailure } from '@temporalio/common';
import { ScheduleOverlapPolicy } from '@temporalio/client';
import { toScheduleOptions } from '../../schedules/to-temporal';
import { registryOf, activitiesOf } from '../helpers/app';
import { rolloutId } from '../../src/core/ids';
import { actOnRollout, rolloutStatus } from '../../src/rollout/actions';
import { closedRun } from '../helpers/rollout';

async function main(): Promise<void> {
  const env = await startDevEnv();
  // The channel can hold a post in flight (the `cancel` group kills a run there).
  const postHold = { on: false, arrived: deferred(), release: deferred() };
  const channel = channelService();
  channel.app.addHook('preHandler', async (req) => {
    if (req.method !== 'POST' || !postHold.on) return;
    postHold.on = false;
    postHold.arrived.resolve();
    await postHold.release.promise;
  });
  const { standins, activities } = await startOutside({ channel });
  const taskQueue = unique('record');
  // Plain JSON of the proto (longs, enums, bytes as strings): what History.fromObject reads back.
  const History = temporal.api.history.v1.History;
  // `workflowId` is kept beside the events for a workflow that reads its own ID (the tick's nominal
  // time falls back to it); the replay test passes it, and History.fromObject ignores the extra field.
  const out = async (name: string, handle: { workflowId: string; fetchHistory(): Promise<temporal.api.history.v1.IHistory> }, keepId = false) => {
    const decoded = History.decode(History.encode(await handle.fetchHistory()).finish());
    const json = History.toObject(decoded, { longs: String, enums: String, bytes: String });
    writeFileSync(path.join(__dirname, 'histories', `${name}.json`), JSON.stringify(keepId ? { workflowId: handle.workflowId, ...json } : json, null, 1));
  };
  const groups = process.argv.slice(2);
  const wanted = (group: string) => groups.length === 0 || groups.includes(group);
  try {
    if (wanted('wake'))
      await withWorker(
        env.nativeConnection,
        taskQueue,
        async () => {
          const deps = await startWake(
            env.client,
            taskQueue,
            wakeInput('deps', 'acme/web:react', 'release.published', { repo: 'acme/web', package: 'react', from: '19.0.0', to: '19.1.0' }),
          );
          await deps.result();
          await out('deps-success', deps);

          const campaign = await startWake(env.client, taskQueue, wakeInput('campaigns', 'spring', 'report.due', { dashboards: ['reach', 'quiet-ctr'] }));
          await eventually(
            () => campaign.query(statusQuery),
            (s: RunStatus) => s.awaitingApproval !== undefined,
            30_000,
          );
          await campaign.signal(approveSignal, { who: 'ana' });
          await campaign.result();
          await out('campaign-approved', campaign);
          // One of its subagents (a child workflow with its own model turn), by the ID the parent started it under.
          const parentEvents = (await campaign.fetchHistory()).events ?? [];
          const childId = parentEvents.find((e) => e.childWorkflowExecutionStartedEventAttributes)?.childWorkflowExecutionStartedEventAttributes
            ?.workflowExecution?.workflowId;
          if (!childId) throw new Error('the campaign run started no subagent');
          await out('subagent-summarized', env.client.workflow.getHandle(childId));

          const killed = await startWake(env.client, taskQueue, wakeInput('campaigns', 'autumn', 'report.due', { dashboards: ['reach'] }));
          await eventually(
            () => killed.query(statusQuery),
            (s: RunStatus) => s.awaitingApproval !== undefined,
            30_000,
          );
          await killed.executeUpdate(killUpdate, { args: [{ who: 'ops', reason: 'recording' }] });
          await killed.result();
          await out('campaign-killed', killed);
        },
        { activities },
      );

    // The coalescing path: two events in one batch, a third in a second batch, a redelivery answered
    // from the dedup table, then the coalescer closes idle past its dedup horizon. Its history and one
    // coalesced run's are recorded.
    const agents = coalescing('canary', { debouncePeriodMs: 300, maxWaitMs: 2000, idleCloseMs: 2000, dedupHorizonMs: 3000 });
    const coalesceQueue = unique('record-coalesce');
    if (wanted('coalesce'))
      await withWorker(
        env.nativeConnection,
        coalesceQueue,
        async () => {
          const gate = new Gate({ client: env.client, taskQueue: coalesceQueue, registry: registryOf(agents) });
          const ping = (type: string) => ({
            source: 'ping',
            entity: 'recorded',
            type,
            occurredAt: '2026-12-02T10:00:00Z',
            payload: {},
            deliveryId: `rec-${type}`,
          });
          const a = await gate.admit(ping('one'));
          await gate.admit(ping('two'));
          await awaitRun(env.client, a);
          const c = await gate.admit(ping('three'));
          await awaitRun(env.client, c);
          await gate.admit({ ...ping('one'), deliveryId: 'rec-one-again' });
          const coalescer = env.client.workflow.getHandle(a.coalescerId!);
          await coalescer.result();
          await out('coalescer-two-runs', coalescer);
          await out('canary-coalesced', env.client.workflow.getHandle(a.runKey));
        },
        { activities: activitiesOf({ agents, outside: standinOutside(standins) }) },
      );

    // Schedules: a Temporal Schedule's tick (a coalescing agent's window: the tick passes the gate,
    // which offers it to the coalescer, and waits for the run) and the schedule's ledger it reports to.
    const scheduleQueue = unique('record-schedules');
    const tickAgents = coalescing('canary', { debouncePeriodMs: 300, maxWaitMs: 2000, idleCloseMs: 2000 });
    const tickQueue = unique('record-ticks');
    if (wanted('schedules'))
      await withWorker(
        env.nativeConnection,
        tickQueue,
        async () => {
          const def = testSchedule({ overlap: 'skip', catchUp: 'latest', spec: { every: '2s' } });
          const schedule = await env.client.schedule.create(toScheduleOptions(def, tickQueue, registryOf(tickAgents)));
          const ticks = await eventually(
            () => ticksOf(env.client, def.id),
            (t) => t.filter((x) => x.status.name === 'COMPLETED').length >= 2,
            60_000,
            'two completed ticks',
          );
          await schedule.delete();
          const tick = ticks.filter((x) => x.status.name === 'COMPLETED').sort((a, b) => a.startTime.getTime() - b.startTime.getTime())[0]!;
          if (tick.type !== 'scheduleTickWorkflow') throw new Error(`the coalescing agent's Schedule started ${tick.type}, not a tick`);
          await out('schedule-tick-coalescing', env.client.workflow.getHandle(tick.workflowId), true);
          const ledger = env.client.workflow.getHandle(ledgerWorkflowId(def.id));
          await eventually(
            () => ledger.query(gapsQuery),
            (q) => q.reports >= 2,
            30_000,
            'the ledger holding two reports',
          );
          await out('schedule-ledger-open', ledger);
          await ledger.terminate('recorded');
        },
        { activities: activitiesOf({ agents: tickAgents, outside: standinOutside(standins) }) },
      );

    // A fixed-delay loop of two windows (a durable timer between).
    if (wanted('schedules'))
      await withWorker(
        env.nativeConnection,
        scheduleQueue,
        async () => {
          const scheduleId = unique('fixed');
          const input: FixedDelayInput = { scheduleId, agent: 'canary', payload: {}, delayMs: 1000, maxRuns: 2 };
          const loop = await env.client.workflow.start('fixedDelayWorkflow', {
            workflowId: fixedDelayWorkflowId(scheduleId),
            taskQueue: scheduleQueue,
            args: [input],
          });
          await loop.result();
          const cadence = await loop.query(cadenceQuery);
          if (cadence.runs !== 2) throw new Error(`fixed-delay ran ${cadence.runs} windows`);
          await out('fixed-delay-two-windows', loop);
        },
        { activities },
      );
    // A one-call agent's windows, started by the Schedule itself: on time, found taken (a backfill
    // over a window that ran), and late (catchUp latest folds it into the newest due window, its child).
    if (wanted('direct'))
      await withWorker(
        env.nativeConnection,
        scheduleQueue,
        async () => {
          const closed = (n: number) => (t: Awaited<ReturnType<typeof ticksOf>>) => t.length >= n && t.every((x) => x.status.name !== 'RUNNING');
          const all = testSchedule({ overlap: 'buffer_all', catchUp: 'all', spec: { every: '1h' } });
          const allSchedule = await createSchedule(env.client, all, scheduleQueue);
          const window = { start: new Date('2026-01-01T00:00:00Z'), end: new Date('2026-01-01T00:00:00Z'), overlap: ScheduleOverlapPolicy.BUFFER_ALL };
          await allSchedule.backfill(window);
          const [ran] = await eventually(() => ticksOf(env.client, all.id), closed(1), 30_000, 'the backfilled window');
          await allSchedule.backfill(window);
          const runs = await eventually(() => ticksOf(env.client, all.id), closed(2), 30_000, 'the window backfilled again');
          const again = runs.find((r) => r.runId !== ran!.runId)!;
          await allSchedule.delete();
          await out('schedule-run-window', env.client.workflow.getHandle(ran!.workflowId, ran!.runId), true);
          await out('schedule-run-duplicate', env.client.workflow.getHandle(again.workflowId, again.runId), true);

          const latest = testSchedule({ overlap: 'skip', catchUp: 'latest', spec: { every: '1h' } });
          const latestSchedule = await createSchedule(env.client, latest, scheduleQueue);
          await latestSchedule.backfill({ ...window, overlap: ScheduleOverlapPolicy.SKIP });
          const [folded] = await eventually(() => ticksOf(env.client, latest.id), closed(1), 30_000, 'the late window');
          await latestSchedule.delete();
          await out('schedule-run-folded', env.client.workflow.getHandle(folded!.workflowId, folded!.runId), true);
        },
        { activities },
      );
    // A rollout: started, stepped, a promote refused (no history), then rolled back by itself when a
    // failed candidate run fails its check: a page, and a stop of the candidate's runs in flight.
    if (wanted('rollout')) {
      const q = unique('record-rollout');
      await withWorker(
        env.nativeConnection,
        q,
        async () => {
          const t = { client: env.client, taskQueue: q, agent: 'canary', current: 'v1', everyMs: 1000 };
          const person = { who: 'ann', reason: 'recording' };
          const check = { name: 'errors', metric: 'non_success' as const, bound: 0.5, minRuns: 1, onFail: 'stop' as const };
          const started = await actOnRollout(t, { kind: 'start', candidate: 'v2', share: 0.2, minRuns: 1, checks: [check], ...person });
          const stepped = await actOnRollout(t, { kind: 'step', share: 0.4, ...person });
          const refused = await actOnRollout(t, { kind: 'promote', ...person });
          if (!started.ok || !stepped.ok || refused.ok) throw new Error(`rollout: ${JSON.stringify([started, stepped, refused])}`);
          await closedRun(env.client, q, 'canary', 'v2', 'failed');
          await eventually(
            () => rolloutStatus(env.client, q, 'canary'),
            (s) => s?.state.phase === 'rolled_back',
            30_000,
            'the rollback by itself',
          );
          const handle = env.client.workflow.getHandle(rolloutId(q, 'canary'));
          // The page and the stop (two sweeps, 2 s apart) carried out.
          await eventually(
            async () => (await handle.fetchHistory()).events ?? [],
            (events) => {
              const scheduled = events.filter((e) => e.activityTaskScheduledEventAttributes);
              const names = scheduled.map((e) => e.activityTaskScheduledEventAttributes!.activityType?.name);
              const ended = events.filter((e) => e.activityTaskCompletedEventAttributes || e.activityTaskFailedEventAttributes).length;
              return names.includes('sendPage') && names.includes('stopVersionRuns') && ended === scheduled.length;
            },
            30_000,
            'the page and the stop done',
          );
          await out('rollout-rolled-back-by-itself', handle);
          await handle.terminate('recorded');
        },
        { activities },
      );
    }

    if (wanted('supervisor')) {
      // A storm trip that pages, a reset and a release (two held wakes run), a halt, and a discard.
      const q = unique('record-supervisor');
      const policy = testPolicy({ storm: { fleetPerMinute: 2, rationale: 'recording: a storm is more than 2 wakes a minute' } });
      const ping = (entity: string) => ({
        source: 'ping',
        entity,
        type: 'check',
        occurredAt: new Date(Date.now() - 30_000).toISOString(),
        payload: {},
        deliveryId: `${entity}-d`,
      });
      await withWorker(
        env.nativeConnection,
        q,
        async () => {
          const gate = supervisedGate(env.client, q, policy);
          await Promise.all([0, 1, 2, 3, 4].map((i) => gate.admit(ping(unique(`storm-${i}`)))));
          await eventually(
            () => supervisorStatus(env.client, q),
            (st) => st?.mode === 'halted' && !!st.trip?.page,
            30_000,
          );
          await eventually(
            () => gate.supervisor.memo(0),
            (m) => m.mode === 'halted',
            10_000,
          );
          const released = await gate.admit(ping(unique('held-released')));
          await eventually(
            () => viewOf(env.client, q),
            (v) => v.live === 0 && v.held.total >= 1,
            30_000,
          );
          await actOnSupervisor(env.client, q, { kind: 'reset', who: 'ana', reason: 'recording' });
          await actOnSupervisor(env.client, q, { kind: 'release', who: 'ana', reason: 'recording' });
          await env.client.workflow.getHandle(released.runKey).result();
          await actOnSupervisor(env.client, q, { kind: 'halt', who: 'ana', reason: 'recording' });
          await eventually(
            () => gate.supervisor.memo(0),
            (m) => m.mode === 'halted',
            10_000,
          );
          // The worker reads the supervisor's memo through a cache of up to 250 ms: let it see the halt.
          await new Promise((r) => setTimeout(r, 600));
          const discarded = await gate.admit(ping(unique('held-discarded')));
          await eventually(
            () => viewOf(env.client, q),
            (v) => v.held.byAgent.canary !== undefined,
            30_000,
          );
          await actOnSupervisor(env.client, q, { kind: 'reset', who: 'ana', reason: 'recording' });
          await actOnSupervisor(env.client, q, { kind: 'discard', who: 'ana', reason: 'recording' });
          await env.client.workflow.getHandle(discarded.runKey).result();
          await new Promise((r) => setTimeout(r, 2000)); // a few observation rounds
          await gate.close();
          await out('supervisor-trip-reset-release', supervisorHandle(env.client, q));
          await out('wake-held-released', env.client.workflow.getHandle(released.runKey));
          await out('wake-held-discarded', env.client.workflow.getHandle(discarded.runKey));
        },
        { activities: activitiesOf({ outside: standinOutside(standins), supervisor: policy }) },
      );
    }
    if (wanted('stops')) {
      // A halt with a live run (patch supervisor-stops-retried-and-swept): the first stop fails and is
      // made again, the one that lands is swept once more, then a reset.
      const q = unique('record-stops');
      const policy = testPolicy();
      const real = activitiesOf({ outside: standinOutside(standins), supervisor: policy });
      let stops = 0;
      const flaky = {
        ...real,
        stopLiveRuns: async (req: Parameters<typeof real.stopLiveRuns>[0]) => {
          if (++stops === 1) throw ApplicationFailure.nonRetryable('recording: the frontend is away');
          return real.stopLiveRuns(req);
        },
      };
      await withWorker(
        env.nativeConnection,
        q,
        async () => {
          const gate = supervisedGate(env.client, q, policy);
          const live = await gate.admit({
            source: 'ping',
            entity: unique('live'),
            type: 'check',
            occurredAt: new Date(Date.now() - 30_000).toISOString(),
            payload: { holdMs: 60_000 },
            deliveryId: 'live-d',
          });
          await eventually(
            () => env.client.workflow.getHandle(live.runKey).query(statusQuery),
            (st: RunStatus) => st.phase === 'hold',
            30_000,
          );
          await actOnSupervisor(env.client, q, { kind: 'halt', who: 'ana', reason: 'recording' });
          await env.client.workflow.getHandle(live.runKey).result();
          await new Promise((r) => setTimeout(r, 5000)); // the sweep
          if (stops < 3) throw new Error(`the stop was made ${stops} times, not failed, retried and swept`);
          await actOnSupervisor(env.client, q, { kind: 'reset', who: 'ana', reason: 'recording' });
          await new Promise((r) => setTimeout(r, 1000));
          await gate.close();
          await out('supervisor-halt-stop-retried-swept', supervisorHandle(env.client, q));
        },
        { activities: flaky },
      );
    }
    if (wanted('pages')) {
      // A storm trip whose page the pager refuses twice (patch supervisor-pages-resent): sent again
      // at a backoff until it lands, then a reset.
      const q = unique('record-pages');
      const policy = testPolicy({ storm: { fleetPerMinute: 3, rationale: 'recording: a storm is more than 3 wakes a minute' }, pageResendMs: 1000 });
      const real = activitiesOf({ outside: standinOutside(standins), supervisor: policy });
      let sends = 0;
      const refusing = {
        ...real,
        sendPage: async (page: Parameters<typeof real.sendPage>[0]) => {
          if (++sends <= 2) throw ApplicationFailure.nonRetryable('recording: the pager refused the event', 'PagerRejected');
          return real.sendPage(page);
        },
      };
      await withWorker(
        env.nativeConnection,
        q,
        async () => {
          const gate = supervisedGate(env.client, q, policy);
          await Promise.all(
            [0, 1, 2, 3].map((i) =>
              gate.admit({
                source: 'ping',
                entity: unique(`storm-${i}`),
                type: 'check',
                occurredAt: new Date(Date.now() - 30_000).toISOString(),
                payload: {},
                deliveryId: `storm-${i}`,
              }),
            ),
          );
          await eventually(
            () => supervisorStatus(env.client, q),
            (st) => !!st?.trip?.page && !('error' in st.trip.page),
            30_000,
            'the page landing on its third send',
          );
          if (sends !== 3) throw new Error(`the page was sent ${sends} times, not refused twice and delivered`);
          await actOnSupervisor(env.client, q, { kind: 'reset', who: 'ana', reason: 'recording' });
          await new Promise((r) => setTimeout(r, 1000));
          await gate.close();
          await out('supervisor-page-refused-resent', supervisorHandle(env.client, q));
        },
        { activities: refusing },
      );
    }
    if (wanted('caps')) {
      // Two episodes of one wake cap within its window (patch supervisor-cap-pages-once-per-window):
      // the first pages, the second is held without a page.
      const q = unique('record-caps');
      const policy = testPolicy({ caps: { fleet: [], agents: { canary: [{ windowMs: 6000, wakes: 2, rationale: 'recording: two wakes per 6 s' }] } } });
      await withWorker(
        env.nativeConnection,
        q,
        async () => {
          const gate = supervisedGate(env.client, q, policy);
          const ping = (name: string) => ({
            source: 'ping',
            entity: unique(name),
            type: 'check',
            occurredAt: new Date(Date.now() - 30_000).toISOString(),
            payload: {},
            deliveryId: unique('d'),
          });
          const run = async (name: string) => awaitRun(env.client, await gate.admit(ping(name)));
          await run('cap-a');
          await new Promise((r) => setTimeout(r, 3000));
          await run('cap-b');
          const c = await run('cap-c');
          const d = await run('cap-d');
          if (c.held?.hold !== 'cap' || d.held?.hold !== 'cap') throw new Error('the third and fourth wakes were not held on the cap');
          await new Promise((r) => setTimeout(r, 1000));
          await gate.close();
          await out('supervisor-cap-episodes-one-page', supervisorHandle(env.client, q));
          // A run held on the cap under the rule that keeps a nudge arriving during a re-check (patch hold-keeps-nudge-during-recheck).
          await out('wake-held-on-cap', env.client.workflow.getHandle(c.runKey));
        },
        { activities: activitiesOf({ outside: standinOutside(standins), supervisor: policy }) },
      );
    }
    if (wanted('drain')) {
      // A storm during a person's drain turns it into a halt (patch supervisor-trips-while-draining), then a reset.
      const q = unique('record-drain');
      const policy = testPolicy({ storm: { fleetPerMinute: 3, rationale: 'recording: a storm is more than 3 wakes a minute' } });
      await withWorker(
        env.nativeConnection,
        q,
        async () => {
          const gate = supervisedGate(env.client, q, policy);
          const ping = (name: string) => ({
            source: 'ping',
            entity: unique(name),
            type: 'check',
            occurredAt: new Date(Date.now() - 30_000).toISOString(),
            payload: {},
            deliveryId: unique('d'),
          });
          await gate.admit(ping('before-drain'));
          await actOnSupervisor(env.client, q, { kind: 'drain', who: 'ana', reason: 'recording' });
          await eventually(
            () => gate.supervisor.memo(0),
            (m) => m.mode === 'draining',
            10_000,
          );
          await Promise.all([0, 1, 2].map((i) => gate.admit(ping(`drain-storm-${i}`))));
          await eventually(
            () => supervisorStatus(env.client, q),
            (st) => st?.mode === 'halted' && st.trip?.kind === 'storm' && !!st.trip.page,
            30_000,
            'the storm during the drain',
          );
          await actOnSupervisor(env.client, q, { kind: 'reset', who: 'ana', reason: 'recording' });
          await new Promise((r) => setTimeout(r, 1000));
          await gate.close();
          await out('supervisor-drain-storm-halts', supervisorHandle(env.client, q));
        },
        { activities: activitiesOf({ outside: standinOutside(standins), supervisor: policy }) },
      );
    }
    if (wanted('held-can')) {
      // A run held on a halt that continues as new (patch held-runs-continue-as-new), on a dev server
      // of its own that suggests continue-as-new after 60 events; then a reset and a release.
      const canEnv = await startDevEnv({ dynamicConfig: { 'limit.historyCount.suggestContinueAsNew': 60 } });
      try {
        const q = unique('record-held-can');
        const policy = testPolicy();
        await withWorker(
          canEnv.nativeConnection,
          q,
          async () => {
            const gate = supervisedGate(canEnv.client, q, policy);
            await actOnSupervisor(canEnv.client, q, { kind: 'halt', who: 'ana', reason: 'recording' });
            await eventually(
              () => gate.supervisor.memo(0),
              (m) => m.mode === 'halted',
              10_000,
            );
            const a = await gate.admit({
              source: 'ping',
              entity: unique('long-hold'),
              type: 'check',
              occurredAt: new Date(Date.now() - 30_000).toISOString(),
              payload: {},
              deliveryId: 'held-d',
            });
            const handle = canEnv.client.workflow.getHandle(a.runKey);
            await eventually(
              () => handle.query(statusQuery),
              (st: RunStatus) => st.phase === 'held',
              30_000,
            );
            const firstRunId = (await handle.describe()).runId;
            await pokeUntilContinued(handle, firstRunId, () => handle.signal(holdNudgeSignal), 300, 'the held run continuing as new');
            await eventually(
              () => handle.query(statusQuery),
              (st: RunStatus) => st.phase === 'held',
              30_000,
            );
            await actOnSupervisor(canEnv.client, q, { kind: 'reset', who: 'ana', reason: 'recording' });
            await actOnSupervisor(canEnv.client, q, { kind: 'release', who: 'ana', reason: 'recording' });
            await handle.result();
            await gate.close();
            await out('wake-held-continued-as-new', canEnv.client.workflow.getHandle(a.runKey, firstRunId));
            await out('wake-held-resumed-released', handle);
            // The supervisor pushed past 60 events by wake counts: a run that continues as new with its memo
            // (patch supervisor-continues-without-waiting-for-pages).
            const sup = supervisorHandle(canEnv.client, q);
            const supFirst = (await sup.describe()).runId;
            await pokeUntilContinued(sup, supFirst, () => sup.signal(wakesSignal, { counts: { canary: 1 } }), 0, 'the supervisor continuing as new');
            await out('supervisor-continued-as-new', canEnv.client.workflow.getHandle(supervisorId(q), supFirst));
          },
          { activities: activitiesOf({ outside: standinOutside(standins), supervisor: policy }) },
        );
      } finally {
        await canEnv.teardown();
      }
    }
    if (wanted('cancel')) {
      // Cancellation that waits for the step in flight (patches cancel-waits-for-steps,
      // effects-finish-when-cancelled, fixed-delay-waits-for-window): a kill during a tool call, a
      // kill during an effect, and a fixed-delay loop cancelled mid-window.
      const q = unique('record-cancel');
      await withWorker(
        env.nativeConnection,
        q,
        async () => {
          const held = await startWake(env.client, q, wakeInput('ping', 'held', 'check', { holdMs: 60_000 }));
          await eventually(
            () => held.query(statusQuery),
            (s: RunStatus) => s.phase === 'hold',
            30_000,
            'the hold',
          );
          await held.executeUpdate(killUpdate, { args: [{ who: 'ops', reason: 'recording' }] });
          await held.result();
          await out('canary-killed-in-hold', held);

          postHold.on = true;
          const posting = await startWake(env.client, q, wakeInput('campaigns', 'winter', 'report.due', { dashboards: ['reach'] }));
          await postHold.arrived.promise;
          await posting.executeUpdate(killUpdate, { args: [{ who: 'ops', reason: 'recording' }] });
          postHold.release.resolve();
          await posting.result();
          await out('campaign-killed-mid-effect', posting);

          const scheduleId = unique('fixed-cancel');
          const input: FixedDelayInput = { scheduleId, agent: 'canary', payload: { holdMs: 60_000 }, delayMs: 1000, maxRuns: 1 };
          const loop = await env.client.workflow.start('fixedDelayWorkflow', { workflowId: fixedDelayWorkflowId(scheduleId), taskQueue: q, args: [input] });
          await eventually(
            () => loop.query(cadenceQuery),
            (c) => c.phase === 'running',
            30_000,
            'a window in flight',
          );
          await new Promise((r) => setTimeout(r, 2000)); // its wake is holding
          await loop.cancel();
          await loop.result().catch(() => undefined);
          if ((await loop.describe()).status.name !== 'CANCELLED') throw new Error('the loop did not end cancelled');
          await out('fixed-delay-cancelled', loop);
        },
        { activities },
      );
    }
  } finally {
    await standins.close();
    await env.teardown();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
