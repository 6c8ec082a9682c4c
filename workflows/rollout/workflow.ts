import {
  ActivityFailure,
  allHandlersFinished,
  condition,
  log,
  makeContinueAsNewFunc,
  proxyActivities,
  setHandler,
  upsertMemo,
  workflowInfo,
} from '@temporalio/workflow';
import type { RolloutActivities } from '../../src/core/contracts';
import { ENTITY_HISTORY_EVENTS } from '../../src/core/history';
import {
  ROLLOUT_EVERY_MS,
  viewOf,
  type RolloutAction,
  type RolloutInput,
  type RolloutReply,
  type RolloutState,
  type RolloutStatus,
  type RolloutWorkflowInput,
} from '../../src/core/rollout';
import { promoteUpdate, rollbackUpdate, rolloutStatusQuery, startRolloutUpdate, stepUpdate } from '../../src/core/rollout-messages';
import { workflowNow } from '../shared/clock';
import { sendPage } from '../shared/pager';
import { timerAt, untilWokeOr } from '../shared/timer';
import { judgeAll } from './checks';
import { newRollout, refusal, transition } from './machine';

const { rolloutEvidence, fleetMode, stopVersionRuns } = proxyActivities<RolloutActivities>({
  startToCloseTimeout: '1 minute',
  retry: { maximumAttempts: 5, initialInterval: '1 second' },
});

/** Updates taken in one run before it continues as new (Temporal refuses more than 2,000 in a run's history). */
const MAX_UPDATES_PER_RUN = 1_500;

/** A failed activity in its cause's own words, not the wrapper's "Activity task failed". */
const causeOf = (err: unknown): string => (err instanceof ActivityFailure && err.cause ? err.cause.message : String(err));

/**
 * The rollout of one agent's candidate version (ID `wakegate-rollout/<task queue>/<agent>`): a thin
 * shell over the pure machine in ./machine.ts. It takes a person's start, step, promote and rollback
 * as updates (each validator refuses what the machine would, so a refused update writes no history;
 * start, step and promote first read the supervisor's mode, and a held fleet is a reply with
 * `accepted: false`), publishes its view in the memo key `rollout` after every accepted move (a
 * run's first step reads it), and while ramping takes evidence every `everyMs` (default 30 s)
 * through an activity, feeding the machine the fleet's mode and then the two versions' figures. It
 * carries out what the machine asks: a page through the supervisor's pager, a stop of the
 * candidate's runs in flight. Not ramping, it starts no timer and no activity: an idle rollout costs
 * no actions. It continues as new with its state, whole, when Temporal suggests it, past
 * ENTITY_HISTORY_EVENTS events, or after MAX_UPDATES_PER_RUN updates.
 */
export async function rolloutWorkflow(input: RolloutWorkflowInput): Promise<void> {
  const { taskQueue, agent } = input;
  const everyMs = input.everyMs ?? ROLLOUT_EVERY_MS;
  let m = input.state ?? newRollout({ agent, current: input.current });
  const queue: RolloutAction[] = [];

  const feed = (i: RolloutInput): RolloutReply => {
    const out = transition(m, i, workflowNow());
    m = out.state;
    queue.push(...out.actions);
    return out.reply;
  };
  let updates = 0;
  listen({ taskQueue, agent, feed, state: () => m, everyMs, counted: () => (updates += 1) });

  let memoJson = '';
  const memoChanged = () => JSON.stringify(viewOf(m)) !== memoJson;
  /** The view is what a run's first step reads: published before any action, so new wakes leave a rolled-back candidate at once. */
  const publish = () => {
    const view = viewOf(m);
    const json = JSON.stringify(view);
    if (json !== memoJson) {
      memoJson = json;
      upsertMemo({ rollout: view });
    }
  };
  const timeToContinue = () => {
    const info = workflowInfo();
    return info.continueAsNewSuggested || info.historyLength >= ENTITY_HISTORY_EVENTS || updates >= MAX_UPDATES_PER_RUN;
  };

  const due = timerAt();
  let evidenceAtMs: number | undefined;
  for (;;) {
    publish();
    evidenceAtMs = m.phase === 'ramping' ? (evidenceAtMs ?? workflowNow() + everyMs) : undefined;
    if (!queue.length) {
      const phase = m.phase;
      const woke = () => queue.length > 0 || m.phase !== phase || memoChanged() || timeToContinue();
      if (evidenceAtMs === undefined) await condition(woke);
      else if (workflowNow() < evidenceAtMs) await untilWokeOr(woke, due(evidenceAtMs));
    }
    if (evidenceAtMs !== undefined && m.phase === 'ramping' && workflowNow() >= evidenceAtMs) {
      await takeEvidence(m, taskQueue, feed);
      evidenceAtMs = workflowNow() + everyMs;
    }
    // Stops before pages: a page may retry for minutes, the candidate's runs should not wait on it.
    queue.sort((a, b) => (a.kind === b.kind ? 0 : a.kind === 'stop' ? -1 : 1));
    while (queue.length) {
      publish();
      await perform(queue.shift()!, taskQueue);
    }
    if (timeToContinue()) {
      publish();
      await condition(allHandlersFinished);
      if (queue.length) continue; // a person's action came in: act on it first
      // The view goes with it: a next run with no memo until its first task would read as no rollout.
      return makeContinueAsNewFunc<typeof rolloutWorkflow>({ memo: { rollout: viewOf(m) } })({ taskQueue, agent, current: m.current, everyMs, state: m });
    }
  }
}

type Feed = (i: RolloutInput) => RolloutReply;

/**
 * The rollout's messages, each fed to the machine: a person's start, step, promote and rollback
 * (updates, each `counted` against the run's limit, refused by their validator as the machine would
 * refuse them) and the status query.
 */
function listen(ctx: { taskQueue: string; agent: string; feed: Feed; state: () => RolloutState; everyMs: number; counted: () => void }): void {
  const { taskQueue, agent, feed, state } = ctx;
  const refuse = (i: RolloutInput) => {
    const why = refusal(state(), i);
    if (why) throw new Error(why);
  };
  const person = (i: RolloutInput): RolloutReply => {
    ctx.counted();
    const reply = feed(i);
    log.info('rollout: a person acted', { agent, kind: i.kind, accepted: reply.accepted, message: reply.message });
    return reply;
  };
  // Start, step and promote are held while the fleet is: the supervisor's mode is read first (the
  // machine has it only from evidence, which a rollout not ramping does not take).
  const afterFleet = async (i: RolloutInput): Promise<RolloutReply> => {
    feed({ kind: 'fleet', mode: await fleetMode({ taskQueue }) });
    return person(i);
  };
  setHandler(startRolloutUpdate, (r) => afterFleet({ ...r, kind: 'start' }), { validator: (r) => refuse({ ...r, kind: 'start' }) });
  setHandler(stepUpdate, (r) => afterFleet({ ...r, kind: 'step' }), { validator: (r) => refuse({ ...r, kind: 'step' }) });
  setHandler(promoteUpdate, (r) => afterFleet({ ...r, kind: 'promote' }), { validator: (r) => refuse({ ...r, kind: 'promote' }) });
  setHandler(rollbackUpdate, (r) => person({ ...r, kind: 'rollback' }), { validator: (r) => refuse({ ...r, kind: 'rollback' }) });
  setHandler(rolloutStatusQuery, (): RolloutStatus => {
    const m = state();
    return { state: m, view: viewOf(m), everyMs: ctx.everyMs, checks: m.evidence ? judgeAll(m.checks, m.evidence) : [] };
  });
}

/** The two versions' runs closed since the current step began, and the fleet's mode: fed to the machine in that order. */
async function takeEvidence(m: RolloutState, taskQueue: string, feed: Feed): Promise<void> {
  const { agent, current, candidate, stepMs } = m;
  const shadowDiff = m.checks.some((c) => c.metric === 'shadow_diff');
  const reading = await rolloutEvidence({ taskQueue, agent, current, candidate: candidate!, sinceMs: stepMs!, ...(shadowDiff ? { shadowDiff } : {}) }).catch(
    (err: unknown) => {
      log.warn('rollout: no evidence this round', { agent, err: causeOf(err) });
      return undefined;
    },
  );
  if (!reading) return;
  feed({ kind: 'fleet', mode: reading.fleet });
  const reply = feed({ kind: 'evidence', sinceMs: reading.sinceMs, current: reading.current, candidate: reading.candidate });
  if (reading.truncated) log.warn('rollout: more closed runs than one reading takes; the figures are of the first ones', { agent });
  if (reply.phase === 'rolled_back') log.warn('rollout: rolled back by itself', { agent, message: reply.message });
}

/** Carry out one action; a failure is logged (the machine's state already says what happened). */
async function perform(a: RolloutAction, taskQueue: string): Promise<void> {
  if (a.kind === 'page') {
    await sendPage(a.page).then(
      (r) => log.info('rollout: paged', { dedupKey: r.dedupKey, status: r.status }),
      (err: unknown) => log.error('rollout: the page was not sent', { dedupKey: a.page.dedupKey, err: causeOf(err) }),
    );
  } else {
    const { kind: _kind, ...stop } = a;
    await stopVersionRuns({ taskQueue, ...stop }).then(
      (r) => log.info('rollout: asked the candidate runs in flight to stop', { agent: stop.agent, ...r }),
      (err: unknown) => log.error('rollout: the candidate runs in flight were not stopped', { agent: stop.agent, err: causeOf(err) }),
    );
  }
}
