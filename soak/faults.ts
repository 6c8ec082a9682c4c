import type { SoakProcess } from './procs';

/** One fault and the window it covered (epoch ms). */
export interface FaultRecord {
  kind: 'kill' | 'stop' | 'redis-restart' | 'temporal-restart';
  target: string;
  from: number;
  to: number;
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
}

/**
 * The fault injector: about every `everyMs` SIGKILL a random worker, ingress or consumer and start
 * it again; once SIGSTOP a worker past its heartbeat timeout, then SIGCONT; restart Redis once and
 * the dev server once. Each fault is recorded with its window, for the accounting of 5xx answers.
 */
export class FaultInjector {
  readonly faults: FaultRecord[] = [];
  private stopped = false;
  private running: Promise<void>[] = [];

  constructor(private readonly plan: FaultPlan) {}

  start(t0: number, untilMs: number): void {
    const at = (offset: number, fn: () => Promise<void>) =>
      this.running.push(
        (async () => {
          const wait = t0 + offset - Date.now();
          if (wait > 0) await sleep(wait);
          if (!this.stopped && Date.now() < untilMs) await fn();
        })().catch((err: unknown) => console.error('soak fault:', (err as Error).message)),
      );
    for (let offset = this.plan.everyMs; t0 + offset < untilMs; offset += this.plan.everyMs) at(offset, () => this.killOne());
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

  private async window(kind: FaultRecord['kind'], target: string, fn: () => Promise<void>): Promise<void> {
    const from = Date.now();
    console.error(`soak ${new Date(from).toISOString().slice(11, 19)} fault: ${kind} ${target}`);
    try {
      await fn();
    } finally {
      this.faults.push({ kind, target, from, to: Date.now() });
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

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
