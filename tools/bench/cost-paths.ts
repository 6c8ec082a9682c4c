import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { defineSchedule, type Wakegate, type WakeAnswer } from 'wakegate';
import { startIngress } from '../../src/processes/ingress-listeners';
import { syncSchedules } from '../../schedules/sync';
import { githubSign } from '../../test/helpers/github-sign';
import type { SupervisorLink } from '../../src/supervisor/link';
import type { Gate } from '../../src/gate/gate';

/**
 * The wakes bench:cost drives, one path each, through the real gate (or the real webhook listener, or
 * a real Temporal Schedule synced as `npm start` syncs them), with the agents the repo already has:
 * the canary (one-call: record, hold), the dependency bump (examples/: coalescing, a model step and a
 * pull request), the soak's notes agent (overlap `steer`), the examples' GitHub webhook source.
 */

export const OCCURRED_AT = '2026-12-02T10:00:00Z';
/** Coalesced with many events per key: the events of one key, each on a day of its own (the deps trigger buckets by day). */
const dayOf = (j: number) => new Date(Date.parse('2026-11-01T09:00:00Z') + j * 86_400_000).toISOString();
/** After a steer key's first answer, when its second event is sent: the run is past its debounce and in its first model turn or tool call. */
const STEER_AFTER_MS = 1500;
/** The canary's schedule in this benchmark: a window every 2 s, each one run. */
const SCHEDULE_EVERY = '2s';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What a path's driver has to hand. */
export interface DriveContext {
  tag: string;
  taskQueue: string;
  app: Wakegate;
  gate: Gate;
  link: SupervisorLink;
  entry: Client;
  observer: Client;
  /** Wakes (runs) the path is to make. */
  wakes: number;
  eventsPerKey: number;
}

export interface Driven {
  /** Runs to wait for before the path has settled. */
  minRuns: number;
  /** Trigger events sent (deliveries, or a schedule's windows). */
  events: number;
  /** The gate's decisions (or the webhook listener's statuses), counted. */
  answers: Record<string, number>;
  /** Windows a Temporal Schedule fired: each is two actions besides the run it starts (docs: "Schedule Start"). */
  scheduleFires?: number;
  problems: string[];
}

export interface PathDef {
  name: string;
  label: string;
  agent: string;
  drive: (ctx: DriveContext) => Promise<Driven>;
}

const tally = (xs: string[]) => xs.reduce<Record<string, number>>((m, x) => ((m[x] = (m[x] ?? 0) + 1), m), {});
const decisions = (as: WakeAnswer[]) => tally(as.map((a) => a.decision));

const bump = (ctx: DriveContext, kind: string, i: number, to: string, occurredAt = OCCURRED_AT) =>
  ctx.gate.admit({
    source: 'deps',
    entity: `bench/${kind}-${ctx.tag}:pkg${i}`,
    type: 'release.published',
    occurredAt,
    payload: { repo: `bench/${kind}-${ctx.tag}`, package: `pkg${i}`, from: '1.0.0', to },
  });

const oneCall: PathDef = {
  name: 'oneCall',
  label: 'the canary (record, hold), one-call, events one after another',
  agent: 'canary',
  drive: async (ctx) => {
    const answers: WakeAnswer[] = [];
    for (let i = 0; i < ctx.wakes; i++)
      answers.push(await ctx.gate.admit({ source: 'ping', entity: `cost-${ctx.tag}-${i}`, type: 'bench', occurredAt: OCCURRED_AT }));
    return { minRuns: ctx.wakes, events: ctx.wakes, answers: decisions(answers), problems: [] };
  },
};

const coalescedOne: PathDef = {
  name: 'coalescedOne',
  label: 'the dependency bump, coalescing, one event per key, keys one after another',
  agent: 'dependency-bump',
  drive: async (ctx) => {
    const answers: WakeAnswer[] = [];
    for (let i = 0; i < ctx.wakes; i++) answers.push(await bump(ctx, 'one', i, '2.0.0'));
    return { minRuns: ctx.wakes, events: ctx.wakes, answers: decisions(answers), problems: [] };
  },
};

const coalescedMany: PathDef = {
  name: 'coalescedTen',
  label: 'the dependency bump, coalescing, many events on each key at once (one run for them)',
  agent: 'dependency-bump',
  drive: async (ctx) => {
    const answers: WakeAnswer[] = [];
    for (let i = 0; i < ctx.wakes; i++) {
      answers.push(...(await Promise.all(Array.from({ length: ctx.eventsPerKey }, (_, j) => bump(ctx, 'many', i, `2.0.${j}`, dayOf(j))))));
    }
    return { minRuns: ctx.wakes, events: ctx.wakes * ctx.eventsPerKey, answers: decisions(answers), problems: [] };
  },
};

const note = (ctx: DriveContext, i: number, n: number) =>
  ctx.gate.admit({
    source: 'notes',
    entity: `ticket-${ctx.tag}-${i}`,
    type: 'note.added',
    occurredAt: new Date(Date.parse(OCCURRED_AT) + n * 1000).toISOString(),
    payload: { text: `note ${n} on ticket ${i}`, noteKey: `ticket-${ctx.tag}-${i}/${n}` },
  });

const steer: PathDef = {
  name: 'steer',
  label: "the soak's notes agent (overlap steer), a second event while the key's run is live",
  agent: 'soak-notes',
  drive: async (ctx) => {
    const answers = await Promise.all(
      Array.from({ length: ctx.wakes }, async (_, i) => {
        const first = await note(ctx, i, 0);
        await sleep((first.startsInMs ?? 0) + STEER_AFTER_MS);
        return [first, await note(ctx, i, 1)] as const;
      }),
    );
    const notSteered = answers.filter(([, second]) => second.decision !== 'steered').length;
    return {
      minRuns: ctx.wakes,
      events: 2 * ctx.wakes,
      answers: { ...tally(answers.map(([a]) => `first: ${a.decision}`)), ...tally(answers.map(([, b]) => `second: ${b.decision}`)) },
      problems: notSteered ? [`steer: ${notSteered} of ${ctx.wakes} second events were not steered into a live run`] : [],
    };
  },
};

const schedule: PathDef = {
  name: 'schedule',
  label: "the canary's windows: a Temporal Schedule every 2 s starts its run",
  agent: 'canary',
  drive: async (ctx) => {
    const def = defineSchedule({
      id: `cost-canary-${ctx.tag}`,
      description: 'bench:cost: a window of the canary every few seconds.',
      agent: 'canary',
      cadence: 'fixed_rate',
      spec: { every: SCHEDULE_EVERY },
      overlap: 'buffer_all',
      catchUp: 'all',
      rationale: 'bench:cost: every window runs, so each costs what a window costs.',
    });
    await syncSchedules({ client: ctx.entry, taskQueue: ctx.taskQueue, definitions: [def], registry: ctx.app.registry });
    const runs = () => ctx.observer.workflow.count(`TaskQueue = "${ctx.taskQueue}" AND WorkflowType = "runWorkflow"`).then((c) => c.count);
    while ((await runs()) < ctx.wakes) await sleep(250);
    await ctx.entry.schedule.getHandle(def.id).delete();
    const fires = await runs();
    return { minRuns: fires, events: fires, answers: { window: fires }, scheduleFires: fires, problems: [] };
  },
};

const webhook: PathDef = {
  name: 'webhook',
  label: "the examples' GitHub source (a signed release) through the webhook listener, to the dependency bump",
  agent: 'dependency-bump',
  drive: async (ctx) => {
    const source = ctx.app.webhookSources.find((s) => s.name === 'github')!;
    const ingress = await startIngress({
      client: ctx.entry,
      taskQueue: ctx.taskQueue,
      registry: ctx.app.registry,
      sources: ctx.app.webhookSources,
      config: { ...ctx.app.config.ingress, port: 0, operatorPort: 0 },
      allowDevSecrets: true,
      supervisor: ctx.link,
    });
    const statuses: string[] = [];
    try {
      for (let i = 0; i < ctx.wakes; i++) {
        const body = JSON.stringify({
          action: 'published',
          release: { tag_name: 'v2.0.0', published_at: OCCURRED_AT },
          repository: { full_name: `upstream/pkg${i}`, name: `pkg${i}` },
        });
        const res = await fetch(`${ingress.url}/webhooks/github?repo=bench/wh-${ctx.tag}&from=1.0.0`, {
          method: 'POST',
          body,
          headers: {
            'content-type': 'application/json',
            'x-github-event': 'release',
            'x-github-delivery': randomUUID(),
            'x-hub-signature-256': await githubSign(source.devSecret!, body),
          },
        });
        statuses.push(String(res.status));
        await res.arrayBuffer();
      }
    } finally {
      await ingress.close();
    }
    const refused = statuses.filter((s) => s !== '202').length;
    return {
      minRuns: ctx.wakes - refused,
      events: ctx.wakes,
      answers: tally(statuses.map((s) => `HTTP ${s}`)),
      problems: refused ? [`webhook: ${refused} of ${ctx.wakes} deliveries were not answered 202`] : [],
    };
  },
};

export const PATHS: PathDef[] = [oneCall, coalescedOne, coalescedMany, steer, schedule, webhook];
