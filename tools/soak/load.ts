import { spawn } from 'node:child_process';
import path from 'node:path';
import type { Redis } from 'ioredis';
import { streamKey } from '../../src/trigger/queue/redis-streams';
import type { TriggerRegistry } from '../../src/gate/trigger-registry';
import { keyEvent } from '../../src/gate/gate';
import { coalescerId } from '../../src/core/ids';
import { NOTES_SOURCE } from './notes-agent';
import { campaignsDelivery, githubDelivery, invalidDelivery, postOnce, trackerDelivery, type Answered, type Outgoing } from './senders';

const ROOT = path.resolve(__dirname, '..', '..');

export interface WakeSeen {
  agent: string;
  decision: string;
  runKey: string;
  coalescerId?: string;
}

/** One delivery the load generator made, and everything it was answered. */
export interface Delivery {
  id: string;
  kind: 'webhook' | 'replay' | 'queue' | 'queue-dup' | 'cli' | 'invalid';
  what: string;
  attempts: Answered[];
  /** The final answer: 2xx (accepted), 4xx (refused), 5xx/0 (given up). Queue: 0 until the accounting reads Redis. */
  status: number;
  eventKey?: string;
  wakes?: WakeSeen[];
  /** Queue messages (answered by the ack alone): the coalescers their event goes to, for the accounting to ask. */
  coalescerIds?: string[];
}

/** A queue message the load sent, as it was sent: the fault injector sends some again (a redelivery). */
export interface SentMessage {
  source: string;
  fields: Record<string, unknown>;
  eventKey: string;
  /** The coalescer it goes to (the notes agent's). */
  coalescerId: string;
  at: number;
}

export interface LoadOptions {
  ingresses: string[];
  redis: () => Redis;
  registry: TriggerRegistry;
  cliEnv: Record<string, string>;
  /** Deliveries started per second (before bursts). */
  ratePerS: number;
  cliEveryMs: number;
}

const DAY = 86_400_000;
/** A note (the steer agent's queue source) this often, on top of the rate. */
const NOTE_EVERY_MS = 700;

/**
 * The soak's load: signed webhooks spread over the ingresses (with the sender's retries on 5xx,
 * 429 and timeouts, and deliberate replays), queue messages with producer duplicates, CLI emits,
 * bursts on hot wake keys and a trickle of invalid input. Every delivery and its answers are kept.
 */
export class LoadGenerator {
  readonly deliveries: Delivery[] = [];
  /** Queue events by their event key (the key the gate computes: the accounting looks for them in runs). */
  readonly queued: Delivery[] = [];
  /** The notes sent (the steer agent's queue messages), oldest first. */
  readonly notes: SentMessage[] = [];
  private seq = 0;
  private noteSeq = 0;
  private next = 0;
  private inFlight = new Map<Promise<unknown>, string>();
  private stopped = false;
  private readonly base = Date.now() - 30 * DAY;

  constructor(private readonly opts: LoadOptions) {}

  /** Drive load until `untilMs` (epoch), then wait for every delivery in flight to settle. */
  async run(untilMs: number): Promise<void> {
    let lastCli = 0;
    let lastBurst = Date.now();
    let lastNote = 0;
    const tickMs = 1000 / this.opts.ratePerS;
    while (Date.now() < untilMs && !this.stopped) {
      const n = ++this.seq;
      const roll = n % 20;
      if (this.inFlight.size < 48) {
        if (roll < 7) this.track(this.campaign(n, `camp-${n % 12}`), 'campaigns');
        else if (roll < 9) this.track(this.release(n), 'github');
        else if (roll < 11) this.track(this.alert(n), 'tracker');
        else if (roll < 15) this.track(this.queue(n), 'queue');
        else if (roll < 17) this.track(this.invalid(n), 'invalid');
        else this.track(this.campaign(n, n % 2 ? 'hot-a' : 'hot-b'), 'hot');
      }
      if (Date.now() - lastBurst > 10_000) {
        lastBurst = Date.now();
        for (let i = 0; i < 8; i++) this.track(this.campaign(++this.seq, 'hot-a'), 'burst');
      }
      if (Date.now() - lastNote > NOTE_EVERY_MS) {
        lastNote = Date.now();
        this.track(this.note(++this.noteSeq), 'notes');
      }
      if (Date.now() - lastCli > this.opts.cliEveryMs) {
        lastCli = Date.now();
        this.track(this.cli(n), 'cli');
      }
      await new Promise((r) => setTimeout(r, tickMs));
    }
    const report = setInterval(() => {
      const kinds: Record<string, number> = {};
      for (const label of this.inFlight.values()) kinds[label] = (kinds[label] ?? 0) + 1;
      console.error(`soak load: ${this.deliveries.length} deliveries made, still in flight ${JSON.stringify(kinds)}`);
    }, 10_000);
    while (this.inFlight.size) await Promise.race(this.inFlight.keys());
    clearInterval(report);
  }

  stop(): void {
    this.stopped = true;
  }

  private track(p: Promise<unknown>, label = 'delivery'): void {
    const done = p.catch((err: unknown) => console.error('soak load:', (err as Error).message));
    this.inFlight.set(done, label);
    void done.finally(() => this.inFlight.delete(done));
  }

  /** A unique second of event time for each event (keys never collide by accident). */
  private at(n: number, unit = 1000): string {
    return new Date(this.base + n * unit).toISOString();
  }

  private campaign(n: number, campaignId: string): Promise<void> {
    const body = { type: 'config.changed', campaignId, occurredAt: this.at(n), version: n, dashboards: n % 3 ? ['spend'] : ['spend', 'reach'] };
    return this.send('webhook', `campaign ${campaignId}`, campaignsDelivery(`soak-c-${n}`, body), n % 10 === 0);
  }

  private release(n: number): Promise<void> {
    const pkg = `pkg-${n % 6}`;
    const body = {
      action: 'published',
      release: { tag_name: `v1.${n}.0`, published_at: new Date(this.base - (n % 1000) * DAY).toISOString(), id: n },
      repository: { full_name: `upstream/${pkg}`, name: pkg },
    };
    return this.send('webhook', `release ${pkg}`, githubDelivery(`soak-g-${n}`, body, { repo: 'acme/web', from: '1.0.0', package: pkg }), n % 10 === 0);
  }

  private alert(n: number): Promise<void> {
    const service = `svc-${n % 5}`;
    const body = { incidentId: `inc-${n}`, service, alert: 'error rate above 5%', firedAt: this.at(n) };
    return this.send('webhook', `alert ${service}`, trackerDelivery(`soak-t-${n}`, body), n % 10 === 0);
  }

  private async invalid(n: number): Promise<void> {
    const { what, out } = invalidDelivery(n);
    const d: Delivery = { id: `soak-bad-${n}`, kind: 'invalid', what, attempts: [], status: 0 };
    this.deliveries.push(d);
    // Sent again when no answer came back (an ingress killed mid-request) or on a 5xx, like any delivery.
    for (let attempt = 1; attempt <= 10; attempt++) {
      const a = await postOnce(this.ingress(), out, 15_000);
      d.attempts.push(a);
      d.status = a.status;
      if (a.status > 0 && a.status < 500) break;
      await new Promise((r) => setTimeout(r, 500 * attempt));
    }
  }

  private ingress(): string {
    return this.opts.ingresses[this.next++ % this.opts.ingresses.length]!;
  }

  /** Send like a webhook sender: retry 5xx, 429 and failed connections (another ingress, as a balancer would) with backoff; `replay` sends it again later. */
  private async send(kind: Delivery['kind'], what: string, out: Outgoing, replay: boolean): Promise<void> {
    const d: Delivery = { id: `${kind}:${this.deliveries.length}:${what}`, kind, what, attempts: [], status: 0 };
    this.deliveries.push(d);
    for (let attempt = 1; attempt <= 10; attempt++) {
      const a = await postOnce(this.ingress(), out, 15_000);
      d.attempts.push(a);
      d.status = a.status;
      if (a.status >= 200 && a.status < 500 && a.status !== 429) break;
      const after = Number(a.retryAfter ?? '');
      await new Promise((r) => setTimeout(r, Math.min(Number.isFinite(after) && after > 0 ? after * 1000 : 500 * attempt, 5000)));
    }
    if (d.status >= 200 && d.status < 300) {
      d.eventKey = d.attempts.at(-1)!.json?.eventKey as string | undefined;
      d.wakes = wakesOf(d.attempts.at(-1)!.json);
    }
    if (replay && !this.stopped) {
      await new Promise((r) => setTimeout(r, 2000));
      await this.send('replay', what, out, false);
    }
  }

  /** A queue message (campaigns or incidents), and with some messages a producer duplicate (the same event added twice). */
  private async queue(n: number): Promise<void> {
    const incident = n % 3 === 0;
    const source = incident ? 'incidents' : 'campaigns';
    const fields = incident
      ? {
          entity: `svc-q${n % 4}`,
          type: 'alert.fired',
          occurredAt: this.at(n),
          payload: { service: `svc-q${n % 4}`, alert: 'queue depth', incidentId: `q-${n}` },
        }
      : { entity: `qcamp-${n % 8}`, type: 'report.due', occurredAt: this.at(n), payload: { dashboards: ['spend'] } };
    const keyed = keyEvent(this.opts.registry, { source, ...fields });
    const eventKey = keyed.input.eventKey;
    const coalescerIds = keyed.wakes.filter((w) => w.agent.policy.coalesce).map((w) => coalescerId(w.agent.policy.name, w.input.wakeKey));
    const copies = n % 4 === 0 ? 2 : 1;
    for (let i = 0; i < copies; i++) {
      const d: Delivery = {
        id: `queue:${n}:${i}`,
        kind: i ? 'queue-dup' : 'queue',
        what: `${source} ${fields.entity}`,
        attempts: [],
        status: 0,
        eventKey,
        coalescerIds,
      };
      await this.enqueue(source, fields, d);
    }
  }

  /**
   * A note on a ticket (the steer agent's queue source). Tickets come and go: two at a time, five
   * notes each, then never again, so their coalescers close (short horizons) while the soak runs,
   * and an old note can be redelivered after its coalescer closed. The payload names the note's own
   * event key (`noteKey`): what the agent's model was given can be read back from its runs' histories.
   */
  private async note(n: number): Promise<void> {
    const ticket = `ticket-${Math.floor(n / 10)}-${n % 2}`;
    const fields = { entity: ticket, type: 'note.added', occurredAt: this.at(n), payload: { text: `note ${n}`, noteKey: '?' } };
    const keyed = keyEvent(this.opts.registry, { source: NOTES_SOURCE, ...fields });
    const eventKey = keyed.input.eventKey;
    fields.payload.noteKey = eventKey;
    const coalescerIds = keyed.wakes.filter((w) => w.agent.policy.coalesce).map((w) => coalescerId(w.agent.policy.name, w.input.wakeKey));
    this.notes.push({ source: NOTES_SOURCE, fields, eventKey, coalescerId: coalescerIds[0]!, at: Date.now() });
    await this.enqueue(NOTES_SOURCE, fields, { id: `note:${n}`, kind: 'queue', what: `notes ${ticket}`, attempts: [], status: 0, eventKey, coalescerIds });
  }

  /** Add one queue message (retrying while Redis is down); `d` is recorded as its delivery. */
  private async enqueue(source: string, fields: object, d: Delivery): Promise<void> {
    this.deliveries.push(d);
    this.queued.push(d);
    for (let attempt = 1; attempt <= 20; attempt++) {
      try {
        await withTimeout(this.opts.redis().xadd(streamKey(source), '*', 'event', JSON.stringify(fields)), 10_000);
        d.status = 202;
        break;
      } catch (err) {
        d.attempts.push({ t: Date.now(), ingress: 'redis', status: 0, retryAfter: null, error: (err as Error).message });
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  }

  /** `wakegate emit` as a person or a script runs it. */
  private async cli(n: number): Promise<void> {
    const campaign = n % 2 === 0;
    const args = campaign
      ? [
          'emit',
          '--source',
          'campaigns',
          '--entity',
          `cli-camp-${n % 4}`,
          '--type',
          'report.due',
          '--occurred-at',
          this.at(n),
          '--payload',
          '{"dashboards":["spend"]}',
        ]
      : ['emit', '--source', 'ping', '--entity', `cli-${n}`, '--type', 'check', '--occurred-at', this.at(n), '--payload', '{}'];
    const d: Delivery = { id: `cli:${n}`, kind: 'cli', what: args.slice(1, 5).join(' '), attempts: [], status: 0 };
    this.deliveries.push(d);
    for (let attempt = 1; attempt <= 5; attempt++) {
      const t = Date.now();
      const { code, stdout, stderr } = await runCli(args, this.opts.cliEnv);
      let parsed: Record<string, unknown> | undefined;
      try {
        parsed = JSON.parse(stdout) as Record<string, unknown>;
      } catch {
        parsed = undefined;
      }
      const status = code === 0 && parsed ? 202 : 0;
      d.attempts.push({ t, ingress: 'cli', status, retryAfter: null, json: parsed, ...(status ? {} : { error: `exit ${code}: ${stderr.slice(-300)}` }) });
      d.status = status;
      if (status) {
        d.eventKey = parsed!.eventKey as string | undefined;
        d.wakes = wakesOf(parsed);
        break;
      }
      await new Promise((r) => setTimeout(r, 2000));
    }
  }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)));
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

function wakesOf(json: Record<string, unknown> | undefined): WakeSeen[] | undefined {
  const wakes = json?.wakes as WakeSeen[] | undefined;
  return wakes?.map((w) => ({ agent: w.agent, decision: w.decision, runKey: w.runKey, ...(w.coalescerId ? { coalescerId: w.coalescerId } : {}) }));
}

/** Run the `wakegate` command (the compiled CLI) with the soak's settings. */
export function runCli(args: string[], env: Record<string, string>, timeoutMs = 60_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(ROOT, 'bin', 'wakegate.js'), ...args], {
      cwd: ROOT,
      env: { ...process.env, WAKEGATE_LOG_LEVEL: 'warn', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
