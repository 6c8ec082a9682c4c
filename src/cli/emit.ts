import { readFile, stat } from 'node:fs/promises';
import type { Client } from '@temporalio/client';
import { loadConfig } from '../config/config';
import { isRefusal, isSettled, type GateAnswer } from '../core/decision';
import { GateInputError } from '../gate/errors';
import { keyEvent, type KeyedEvent } from '../gate/key-event';
import type { Gate } from '../gate/gate';
import type { TriggerRegistry } from '../gate/trigger-registry';
import { EVENT_LIMITS } from '../gate/limits';
import { app } from './app';
import type { TerminalReason, RunResult } from '../core/run-types';
import { ExitCode, exitForRun, printJson, stdio, UsageError, type Out } from './output';
import { inSpan } from '../tracing/spans';
import { Duration } from '../core/parse';
import { WakeAttr } from '../core/trace-context';

/** The options of `wakegate emit`, as commander parses them. */
export interface EmitOptions {
  source: string;
  entity: string;
  type: string;
  occurredAt?: string;
  payload?: string;
  deliveryId?: string;
  entityVersion?: string;
  agent?: string;
  wait?: boolean;
  /** With `--wait`: how long to wait for the run (a duration: `30s`, `5m`). */
  timeout?: string;
}

/**
 * The `--payload` text: inline JSON, `@path` (a file) or `-` (standard input); a shell argument
 * stops at 128 KiB, a file or a pipe does not. Reads at most `EVENT_LIMITS.maxPayloadTextBytes`.
 */
async function payloadText(spec: string | undefined): Promise<string | undefined> {
  if (spec === undefined) return undefined;
  const max = EVENT_LIMITS.maxPayloadTextBytes;
  const tooLarge = (what: string) =>
    new GateInputError('payload_too_large', `--payload ${what} is over ${max} bytes of text: send a reference (a URL, an id) instead of the data`, [
      { path: 'payload', message: `over ${max} bytes of text` },
    ]);
  if (spec === '-') {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of process.stdin) {
      const b = chunk as Buffer;
      size += b.length;
      if (size > max) throw tooLarge('from standard input');
      chunks.push(b);
    }
    return Buffer.concat(chunks).toString('utf8');
  }
  if (spec.startsWith('@')) {
    const file = spec.slice(1);
    try {
      if ((await stat(file)).size > max) throw tooLarge(spec);
      return await readFile(file, 'utf8');
    } catch (err) {
      if (err instanceof GateInputError) throw err;
      throw new UsageError(`--payload ${spec}: cannot read the file: ${(err as Error).message}`);
    }
  }
  if (Buffer.byteLength(spec, 'utf8') > max) throw tooLarge('text');
  return spec;
}

function parsePayload(text: string | undefined): Record<string, unknown> {
  if (text === undefined) return {};
  let value: unknown;
  try {
    value = JSON.parse(text); // V8's JSON.parse is iterative: any depth parses; the gate then checks depth and size
  } catch (err) {
    throw new UsageError(`--payload is not valid JSON: ${(err as Error).message}`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new UsageError('--payload must be a JSON object');
  return value as Record<string, unknown>;
}

function parseVersion(text: string): number {
  const v = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(v)) throw new UsageError(`--entity-version must be a whole number >= 0, got "${text}"`);
  return v;
}

function parseTimeout(text: string | undefined, wait: boolean | undefined): number | undefined {
  if (text === undefined) return undefined;
  if (!wait) throw new UsageError('--timeout bounds --wait: pass both, or neither');
  const parsed = Duration('--timeout', 1000).safeParse(text);
  if (!parsed.success) throw new UsageError(parsed.error.issues[0]?.message ?? `--timeout "${text}" is not a duration`);
  return parsed.data;
}

/**
 * Whether any worker polls the task queue for workflow tasks (Temporal lists the pollers of the last
 * few minutes): without one, `--wait` would wait for nothing.
 */
async function workerPolls(client: Client, taskQueue: string): Promise<boolean> {
  const res = await client.workflowService.describeTaskQueue({
    namespace: client.options.namespace,
    taskQueue: { name: taskQueue },
    taskQueueType: 1, // TASK_QUEUE_TYPE_WORKFLOW
  });
  return (res.pollers ?? []).length > 0;
}

const TIMED_OUT = Symbol('timed out');

/** `promise`, or TIMED_OUT once `ms` have passed (no bound: the promise as it is). */
async function within<T>(promise: Promise<T>, ms: number | undefined): Promise<T | typeof TIMED_OUT> {
  if (ms === undefined) return promise;
  let timer: NodeJS.Timeout | undefined;
  promise.catch(() => undefined); // its connection closes after a timeout; that failure is not news
  try {
    return await Promise.race([promise, new Promise<typeof TIMED_OUT>((resolve) => (timer = setTimeout(() => resolve(TIMED_OUT), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** The outcome of `--wait`: the result of the run that took the event (waiting while it is pending), or how it failed. */
async function waitFor(client: Client, answer: GateAnswer): Promise<{ result?: RunResult; terminalReason?: TerminalReason; error?: string }> {
  if (isSettled(answer) && !answer.result) return {};
  const [{ awaitRun }, { WorkflowFailedError }] = await Promise.all([import('../run/await-run.js'), import('@temporalio/client')]);
  try {
    const result = await awaitRun(client, answer);
    return { result, terminalReason: result.terminalReason };
  } catch (err) {
    if (err instanceof WorkflowFailedError) return { terminalReason: 'failed', error: err.cause?.message ?? err.message };
    throw err;
  }
}

/** The flags one event needs (optional to commander, since `--file` takes none of them), named as commander would. */
export function requireEvent(opts: Partial<Pick<EmitOptions, 'source' | 'entity' | 'type'>>): void {
  for (const [key, flag] of [
    ['source', '--source <source>'],
    ['entity', '--entity <entity>'],
    ['type', '--type <type>'],
  ] as const) {
    if (opts[key] === undefined) throw new UsageError(`required option '${flag}' not specified (or pass --file with one event per line)`);
  }
}

/** What `emit` sends, from its options: the event keyed by the deployment's gate (bad input throws before any connection), and `--timeout`. */
export async function keyedEmit(registry: TriggerRegistry, opts: EmitOptions): Promise<{ keyed: KeyedEvent; timeoutMs?: number }> {
  requireEvent(opts);
  const event = {
    source: opts.source,
    entity: opts.entity,
    type: opts.type,
    // Without --occurred-at the emit itself is the event, happening now. A script that retries an
    // emit must pass the same --occurred-at, or a retry in a later bucket is a new event.
    occurredAt: opts.occurredAt ?? new Date().toISOString(),
    payload: parsePayload(await payloadText(opts.payload)),
    deliveryId: opts.deliveryId,
    ...(opts.entityVersion !== undefined ? { version: parseVersion(opts.entityVersion) } : {}),
  };
  const timeoutMs = parseTimeout(opts.timeout, opts.wait);
  return { keyed: keyEvent(registry, event, opts.agent ? { agent: opts.agent } : {}), timeoutMs };
}

/** `wakegate emit` in this process: one event through the gate; prints the answer and returns the exit code. */
export async function emit(opts: EmitOptions): Promise<number> {
  requireEvent(opts);
  const config = loadConfig();
  const wakegate = app();
  const { keyed, timeoutMs } = await keyedEmit(wakegate.registry, opts);
  // The Temporal client (about 0.3 s to load) only once the input is valid: a refusal answers fast.
  // Tracing too, and only when the OTEL_* variables ask for it: the emit is then its wake's root span.
  const tracing = config.tracing.enabled ? (await import('../tracing/provider.js')).startTracing(config.tracing) : undefined;
  const { connectClient } = await import('../config/temporal.js');
  const client = await connectClient(config, tracing ? { interceptors: tracing.clientInterceptors } : {});
  try {
    const gate = wakegate.gate(client, config.taskQueue);
    // A one-shot process sends the wake count it holds to the supervisor before it exits.
    return await answerEmit({ client, gate, taskQueue: config.taskQueue, closeGate: true }, keyed, opts, timeoutMs);
  } finally {
    await client.connection.close();
    // Every span ended so far is exported before the command exits (bounded by the exporter's timeout).
    await tracing?.shutdown();
  }
}

/** The connection an emit is admitted through: this process's own, or a resident process's (src/cli/resident.ts). */
export interface EmitContext {
  client: Client;
  gate: Gate;
  taskQueue: string;
  /** Close the gate once admitted (a one-shot process); a resident process keeps it, its counts flushed on its timer. */
  closeGate: boolean;
}

/** Admit a keyed event, print the answer on `out` and return the exit code: the one place both ways of running `emit` share. */
export async function answerEmit(ctx: EmitContext, keyed: KeyedEvent, opts: EmitOptions, timeoutMs: number | undefined, out: Out = stdio): Promise<number> {
  const { client, gate, taskQueue } = ctx;
  const { event } = keyed;
  const attributes = {
    [WakeAttr.source]: event.source,
    [WakeAttr.eventType]: event.type,
    [WakeAttr.entity]: event.entity,
    [WakeAttr.eventKey]: keyed.input.eventKey,
  };
  // The command is its wake's root span, `--wait` included: its span lasts as long as the command.
  return inSpan('wakegate emit', { root: true, attributes }, async (span) => {
    const admitted = gate.admitKeyed(keyed);
    const answer = await (ctx.closeGate ? admitted.finally(() => gate.close().catch(() => undefined)) : admitted);
    span?.set({ [WakeAttr.decision]: answer.decision, [WakeAttr.runKey]: answer.runKey });
    for (const w of answer.wakes) {
      if (w.held)
        out.stderr(`wakegate: ${w.agent}: held by the supervisor (${w.held.reason}); it runs once a person releases it: wakegate supervisor status\n`);
    }
    if (isRefusal(answer.decision)) {
      printJson(answer, out);
      out.stderr(`wakegate: ${answer.decision}: ${answer.message}\n`);
      return ExitCode.refused;
    }
    if (opts.wait && !(isSettled(answer) && !answer.result) && !(await workerPolls(client, taskQueue))) {
      printJson(answer, out);
      out.stderr(
        `wakegate: ${answer.decision}, but no worker polls task queue "${taskQueue}": nothing would end the wait. ` +
          `The event is taken and runs once a worker polls (npm run worker, or app.worker() with this task queue).\n`,
      );
      return ExitCode.unreachable;
    }
    const waited = opts.wait ? await within(waitFor(client, answer), timeoutMs) : undefined;
    if (waited === TIMED_OUT) {
      printJson({ ...answer, waited: { timedOut: true, afterMs: timeoutMs } }, out);
      out.stderr(`wakegate: ${answer.decision}; its run had not ended after --timeout ${opts.timeout}: it goes on (wakegate explain, or the Web UI)\n`);
      return ExitCode.timedOut;
    }
    span?.set({ [WakeAttr.terminalReason]: waited?.terminalReason });
    printJson(waited ? { ...answer, ...waited } : answer, out);
    const exit = exitForRun(waited?.terminalReason);
    if (exit !== ExitCode.ok) out.stderr(`wakegate: ${answer.decision}; its run ended ${waited?.terminalReason} (exit ${exit})\n`);
    return exit;
  });
}
