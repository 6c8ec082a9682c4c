import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { Redis } from 'ioredis';
import { streamKey } from '../../src/trigger/queue/redis-streams';
import type { RunResult } from '../../src/core/run-types';
import type { SoakProcess } from './procs';
import type { SentMessage } from './load';
import { NOTES_AGENT } from './notes-agent';

/** What operators do, as the soak plays them (see {@link FaultInjector}). */
export type OperatorFault = 'terminate-run' | 'terminate-coalescer' | 'operator-kill' | 'rearm' | 'redeliver';

/** One fault and the window it covered (epoch ms). */
export interface FaultRecord {
  kind: 'kill' | 'stop' | 'redis-restart' | 'temporal-restart' | OperatorFault;
  target: string;
  from: number;
  to: number;
  /** `rearm`, `redeliver`: the events sent again. */
  eventKeys?: string[];
  /** What the operator's tool answered (the CLI's exit code and output, or an error). */
  outcome?: string;
}

/** What the operator faults act with: the harness's Temporal client, the `wakegate` CLI, the queue and the load's notes. */
export interface OperatorTools {
  client: () => Client;
  taskQueue: string;
  everyMs: number;
  /** Run the `wakegate` command with the soak's settings. */
  cli: (args: string[]) => Promise<{ code: number | null; stdout: string; stderr: string }>;
  redis: () => Redis;
  /** The notes the load has sent so far (the steer agent's queue messages), oldest first. */
  notes: () => readonly SentMessage[];
}

export interface FaultPlan {
  procs: SoakProcess[];
  everyMs: number;
  /** The SIGSTOP of one worker, past its activity heartbeat timeout (ms stopped), at this offset. */
  stopAtMs: number;
  stopForMs: number;
  redisAtMs: number;
  restartRedis: () => Promise<void>;
  /** Undefined with an external Temporal: no server restart. */
  temporalAtMs?: number;
  restartTemporal?: () => Promise<void>;
  /** Operator faults, one about every `everyMs`, in turn; absent: none. */
  operator?: OperatorTools;
}

/** How long a rearmed run's deletion may take to show before its events are sent again. */
const REARM_GONE_WITHIN_MS = 120_000;

/**
 * The fault injector: about every `everyMs` SIGKILL a random worker, ingress or consumer and start
 * it again; once SIGSTOP a worker past its heartbeat timeout, then SIGCONT; restart Redis once and
 * the dev server once. Each fault is recorded with its window, for the accounting of 5xx answers.
 *
 * And what operators do, one about every `operator.everyMs`, in turn ({@link OPERATOR_FAULTS}):
 * - `terminate-run`: terminate a live coalesced run by the client, as from the Web UI (it reports
 *   nothing to its coalescer);
 * - `operator-kill`: `wakegate kill <run> --reason R`, the CLI's own code (the `kill` update);
 * - `terminate-coalescer`: terminate a live coalescer workflow (`agent#wakeKey`), as from the Web UI;
 * - `rearm`: `wakegate rearm <run>` of a closed run of the steer agent, then its events sent again
 *   (what a person rearms for), each recorded;
 * - `redeliver`: notes sent again after their coalescer closed (the steer agent's horizons are short).
 * A fault with nothing to act on (no live run yet, no closed coalescer yet) is skipped, unrecorded.
 */
export class FaultInjector {
  readonly faults: FaultRecord[] = [];
  private stopped = false;
  private running: Promise<void>[] = [];
  private untilMs = Infinity;

  constructor(private readonly plan: FaultPlan) {}

  start(t0: number, untilMs: number): void {
    this.untilMs = untilMs;
    const at = (offset: number, fn: () => Promise<void>) =>
      this.running.push(
        (async () => {
          const wait = t0 + offset - Date.now();
          if (wait > 0) await sleep(wait);
          if (!this.stopped && Date.now() < untilMs) await fn();
        })().catch((err: unknown) => console.error('soak fault:', (err as Error).message)),
      );
    for (let offset = this.plan.everyMs; t0 + offset < untilMs; offset += this.plan.everyMs) at(offset, () => this.killOne());
    const op = this.plan.operator;
    if (op) {
      let turn = 0;
      for (let offset = op.everyMs; t0 + offset < untilMs; offset += op.everyMs) {
        const kind = OPERATOR_FAULTS[turn++ % OPERATOR_FAULTS.length]!;
        at(offset, () => this.operatorFault(op, kind));
      }
    }
    at(this.plan.stopAtMs, () => this.stopWorker());
    at(this.plan.redisAtMs, () => this.window('redis-restart', 'redis', this.plan.restartRedis));
    if (this.plan.temporalAtMs !== undefined && this.plan.restartTemporal)
      at(this.plan.temporalAtMs, () => this.window('temporal-restart', 'temporal', this.plan.restartTemporal!));
  }

  /** Wait for the faults under way (a restart in progress) to end. */
  async settle(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.running);
  }

  count(kind: FaultRecord['kind']): number {
    return this.faults.filter((f) => f.kind === kind).length;
  }

  private async window(kind: FaultRecord['kind'], target: string, fn: () => Promise<void | Partial<FaultRecord>>): Promise<void> {
    // An operator's look-up that hung (a server restart) acts no later than the load: the drain is left alone.
    if ((OPERATOR_FAULTS as readonly string[]).includes(kind) && Date.now() >= this.untilMs) return;
    const from = Date.now();
    console.error(`soak ${new Date(from).toISOString().slice(11, 19)} fault: ${kind} ${target}`);
    let more: void | Partial<FaultRecord> = undefined;
    try {
      more = await fn();
    } catch (err) {
      more = { outcome: `error: ${(err as Error).message}` };
      throw err;
    } finally {
      this.faults.push({ kind, target, from, to: Date.now(), ...(more ?? {}) });
    }
  }

  private async operatorFault(op: OperatorTools, kind: OperatorFault): Promise<void> {
    const client = op.client();
    const q = (type: string, status: string, more = '') =>
      `WorkflowType = "${type}" AND TaskQueue = "${op.taskQueue}" AND ExecutionStatus = "${status}"${more}`;
    const ids = async (query: string) => {
      const out: string[] = [];
      for await (const info of client.workflow.list({ query })) out.push(info.workflowId);
      return out;
    };
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(Math.random() * xs.length)];
    const cliOutcome = (r: { code: number | null; stdout: string; stderr: string }) => `exit ${r.code}: ${(r.stdout.trim() || r.stderr.trim()).slice(0, 300)}`;
    switch (kind) {
      case 'terminate-run':
      case 'operator-kill': {
        // A live coalesced run (its ID holds its coalescer's `#`); the steer agent's when there is one, half the time.
        const live = (await ids(q('runWorkflow', 'Running'))).filter((id) => id.includes('#'));
        const notes = live.filter((id) => id.startsWith(`${NOTES_AGENT}#`));
        const target = pick(notes.length && Math.random() < 0.5 ? notes : live);
        if (!target) return;
        if (kind === 'terminate-run')
          return this.window(kind, target, async () => {
            await client.workflow.getHandle(target).terminate('soak: an operator terminates a live run, as from the Web UI');
            return { outcome: 'terminated' };
          });
        return this.window(kind, target, async () => ({
          outcome: cliOutcome(await op.cli(['kill', target, '--reason', 'soak: an operator kills a live run', '--who', 'soak-operator'])),
        }));
      }
      case 'terminate-coalescer': {
        const target = pick(await ids(q('coalescerWorkflow', 'Running')));
        if (!target) return;
        return this.window(kind, target, async () => {
          await client.workflow.getHandle(target).terminate('soak: an operator terminates a coalescer, as from the Web UI');
          return { outcome: 'terminated' };
        });
      }
      case 'rearm': {
        // A closed run of the steer agent whose notes the soak can send again (the rearm is what makes them run again).
        const sent = new Map(op.notes().map((n) => [n.eventKey, n]));
        const target = pick(await ids(q('runWorkflow', 'Completed', ` AND WakeAgent = "${NOTES_AGENT}"`)));
        if (!target) return;
        return this.window(kind, target, async () => {
          const result = (await client.workflow.getHandle(target).result()) as RunResult;
          const events = (result.absorbed ?? []).map((e) => sent.get(e.eventKey)).filter((n) => n !== undefined);
          const r = await op.cli(['rearm', target]);
          // Sent again once the run is gone (the rearm deleted it, even if the command did not finish in
          // time, as across a server restart: deletion goes on in the server): a run still there after
          // REARM_GONE_WITHIN_MS still holds its events.
          const isGone = () =>
            client.workflow
              .getHandle(target)
              .describe()
              .then(
                () => false,
                (err: unknown) => err instanceof WorkflowNotFoundError,
              );
          let gone = await isGone().catch(() => false);
          for (const until = Date.now() + REARM_GONE_WITHIN_MS; !gone && Date.now() < until;) {
            await sleep(2000);
            gone = await isGone().catch(() => false);
          }
          if (!gone) return { outcome: cliOutcome(r) };
          for (const n of events) await op.redis().xadd(streamKey(n.source), '*', 'event', JSON.stringify(n.fields));
          return { outcome: cliOutcome(r), eventKeys: events.map((n) => n.eventKey) };
        });
      }
      case 'redeliver': {
        // Notes sent long enough ago for their coalescer to have closed (20 s idle, 20 s horizon), and it has (by visibility).
        const old = op.notes().filter((n) => Date.now() - n.at > 45_000);
        const open = new Set(await ids(q('coalescerWorkflow', 'Running')));
        const closed = [...new Set(old.map((n) => n.coalescerId))].filter((id) => !open.has(id));
        const target = pick(closed);
        if (!target) return;
        const notes = old.filter((n) => n.coalescerId === target).slice(0, 2);
        return this.window(kind, target, async () => {
          for (const n of notes) await op.redis().xadd(streamKey(n.source), '*', 'event', JSON.stringify(n.fields));
          return { outcome: `sent again ${notes.length} notes`, eventKeys: notes.map((n) => n.eventKey) };
        });
      }
    }
  }

  private async killOne(): Promise<void> {
    const candidates = this.plan.procs.filter((p) => p.pid !== undefined);
    const victim = candidates[Math.floor(Math.random() * candidates.length)];
    if (!victim) return;
    await this.window('kill', victim.name, async () => {
      await victim.kill();
      await sleep(1000);
      // It comes back even if Temporal or Redis is down at that moment (a restart window).
      for (let attempt = 1; ; attempt++) {
        try {
          await victim.start();
          return;
        } catch (err) {
          if (attempt >= 10) throw err;
          await sleep(3000);
        }
      }
    });
  }

  private async stopWorker(): Promise<void> {
    const worker = this.plan.procs.find((p) => p.role === 'worker' && p.pid !== undefined);
    if (!worker) return;
    await this.window('stop', worker.name, async () => {
      worker.signal('SIGSTOP');
      await sleep(this.plan.stopForMs);
      worker.signal('SIGCONT');
    });
  }
}

export const OPERATOR_FAULTS: readonly OperatorFault[] = ['terminate-run', 'operator-kill', 'terminate-coalescer', 'rearm', 'redeliver'];

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
