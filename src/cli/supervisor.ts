import type { Client } from '@temporalio/client';
import { loadConfig } from '../config/config';
import { connectClient } from '../config/temporal';
import { actOnSupervisor, type PersonRequest, type PersonResult } from '../supervisor/actions';
import { liveRuns, supervisorView } from '../supervisor/view';
import { app } from './app';
import { ExitCode, printJson, UsageError } from './output';

export interface PersonOptions {
  who: string;
  reason: string;
}

async function withClient(fn: (client: Client, taskQueue: string) => Promise<number>): Promise<number> {
  const config = loadConfig();
  const client = await connectClient(config);
  try {
    return await fn(client, config.taskQueue);
  } finally {
    await client.connection.close();
  }
}

const person = (opts: PersonOptions) => {
  if (!opts.who?.trim()) throw new UsageError('--who must name the person acting');
  if (!opts.reason?.trim()) throw new UsageError('--reason must say why');
  return { who: opts.who.trim(), reason: opts.reason.trim() };
};

/** A person's request; the supervisor's refusal is printed and is exit 3. */
async function act(client: Client, taskQueue: string, req: PersonRequest): Promise<Extract<PersonResult, { ok: true }> | number> {
  const r = await actOnSupervisor(client, taskQueue, req, app().supervisorPolicy);
  if (r.ok) return r;
  printJson({ accepted: false, error: { code: 'refused', message: r.message } });
  process.stderr.write(`wakegate: refused: ${r.message}\n`);
  return ExitCode.refused;
}

/** `wakegate supervisor status`: breaker state, why it tripped, counters against caps, held wakes by agent and key, live runs. */
export function statusCommand(): Promise<number> {
  return withClient(async (client, taskQueue) => {
    printJson(await supervisorView(client, taskQueue));
    return ExitCode.ok;
  });
}

/** `wakegate supervisor reset --who --reason`: a person re-arms a tripped or halted breaker; recorded. */
export function resetCommand(opts: PersonOptions): Promise<number> {
  const p = person(opts);
  return withClient(async (client, taskQueue) => {
    const r = await act(client, taskQueue, { kind: 'reset', ...p });
    if (typeof r === 'number') return r;
    printJson({
      accepted: true,
      mode: r.status!.mode,
      reset: r.status!.resets.at(-1),
      next: 'held wakes stay held: wakegate supervisor release --who --reason (or discard)',
    });
    return ExitCode.ok;
  });
}

/** `wakegate supervisor release|discard [--agent A] --who --reason`: held wakes run (once; dedup still applies) or end `discarded`. */
export function releaseCommand(action: 'release' | 'discard', opts: PersonOptions & { agent?: string }): Promise<number> {
  const p = person(opts);
  return withClient(async (client, taskQueue) => {
    const r = await act(client, taskQueue, { kind: action, ...p, ...(opts.agent ? { agent: opts.agent } : {}) });
    if (typeof r === 'number') return r;
    printJson({ accepted: true, [action]: r.release });
    return ExitCode.ok;
  });
}

/** `wakegate halt`: hold new wakes (admitted, their runs wait), cancel live runs, commit nothing further. */
export function haltCommand(opts: PersonOptions): Promise<number> {
  const p = person(opts);
  return withClient(async (client, taskQueue) => {
    const r = await act(client, taskQueue, { kind: 'halt', ...p });
    if (typeof r === 'number') return r;
    printJson({ accepted: true, mode: r.status!.mode, trip: r.status!.trip, live: 'being cancelled: wakegate supervisor status' });
    return ExitCode.ok;
  });
}

/**
 * `wakegate drain`: hold new wakes (admitted, their runs wait), let live runs finish, and report when none
 * is left. Live shadow runs are not waited for (they commit nothing; a halt stops them): their
 * number is reported as `liveShadows`.
 */
export function drainCommand(opts: PersonOptions & { timeout: string }): Promise<number> {
  const p = person(opts);
  const timeoutS = Number(opts.timeout);
  if (!Number.isFinite(timeoutS) || timeoutS < 0) throw new UsageError(`--timeout must be seconds >= 0, got "${opts.timeout}"`);
  return withClient(async (client, taskQueue) => {
    const r = await act(client, taskQueue, { kind: 'drain', ...p });
    if (typeof r === 'number') return r;
    const deadline = Date.now() + timeoutS * 1000;
    let { runs: live, shadows } = await liveRuns(client, taskQueue);
    let said = -1;
    while (live > 0 && Date.now() < deadline) {
      if (live !== said) process.stderr.write(`wakegate: draining: ${live} live run(s) left\n`);
      said = live;
      await new Promise((res) => setTimeout(res, 1000));
      ({ runs: live, shadows } = await liveRuns(client, taskQueue));
    }
    // A storm or an error rate during the drain turns it into a halt: say so, not the mode it began in.
    const now = (await supervisorView(client, taskQueue)).status;
    const mode = now?.mode ?? r.status!.mode;
    printJson({ accepted: true, mode, ...(mode === 'halted' && now?.trip ? { trip: now.trip } : {}), drained: live === 0, live, liveShadows: shadows });
    if (shadows > 0) process.stderr.write(`wakegate: ${shadows} live shadow run(s) not waited for: they commit nothing (wakegate halt stops them)\n`);
    if (mode === 'halted') {
      process.stderr.write(
        `wakegate: the drain became a halt (trip #${now?.trip?.id}, ${now?.trip?.kind}: ${now?.trip?.reason}); a person resets the supervisor\n`,
      );
    }
    if (live > 0) {
      process.stderr.write(`wakegate: ${live} run(s) still live after ${timeoutS} s; drain again to keep waiting\n`);
      return ExitCode.error;
    }
    process.stderr.write('wakegate: drained: no live run left; new wakes are held until a person resets the supervisor\n');
    return ExitCode.ok;
  });
}
