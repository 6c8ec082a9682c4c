import type { Client } from '@temporalio/client';
import { loadConfig } from '../config/config';
import { connectClient } from '../config/temporal';
import { TemporalUnreachableError } from '../config/errors';
import type { RolloutReply } from '../core/rollout';
import { actOnRollout, rolloutStatus, type RolloutRequest } from '../rollout/actions';
import { sideBySide } from '../rollout/figures';
import { agentVersions } from '../agents/registry';
import { app } from './app';
import { ExitCode, printJson, UsageError } from './output';
import { parseStart, parseStep, personOf, type StartOptions } from './rollout-args';
import { isUnreachable } from './unreachable';

/** Flags every `wakegate rollout` command takes. */
export interface RolloutFlags {
  who?: string;
  reason?: string;
  json?: boolean;
}

/** The agent as the deployment defines it: its current version, and the others its workers can run. */
function agentOf(agent: string): { current: string; others: string[] } {
  const def = app().agents[agent];
  if (!def) throw new UsageError(`no agent "${agent}" in this deployment (agents: ${Object.keys(app().agents).join(', ')})`);
  return agentVersions(def);
}

async function withClient(fn: (client: Client, taskQueue: string) => Promise<number>): Promise<number> {
  const config = loadConfig();
  const client = await connectClient(config);
  try {
    return await fn(client, config.taskQueue);
  } catch (err) {
    // Connected, then the server went away: the same exit as an unreachable server at connect.
    if (isUnreachable(err)) throw new TemporalUnreachableError(`Temporal is unreachable: ${(err as Error).message}`);
    throw err;
  } finally {
    await client.connection.close();
  }
}

const asJson = (flags: RolloutFlags) => flags.json === true || !process.stdout.isTTY;

/** A person's request to the agent's rollout: its reply printed, a refusal exit 3. */
function act(agent: string, flags: RolloutFlags, req: RolloutRequest): Promise<number> {
  const { current } = agentOf(agent);
  return withClient(async (client, taskQueue) => {
    const r = await actOnRollout({ client, taskQueue, agent, current }, req);
    if (!r.ok) {
      printJson({ accepted: false, error: { code: 'refused', message: r.message } });
      process.stderr.write(`wakegate: refused: ${r.message}\n`);
      return ExitCode.refused;
    }
    print(flags, { agent, ...r.reply }, r.reply);
    return ExitCode.ok;
  });
}

function print(flags: RolloutFlags, json: unknown, reply: RolloutReply): void {
  if (asJson(flags)) printJson(json);
  else process.stdout.write(`${reply.message}\n`);
}

/** `wakegate rollout <agent> start --candidate V --share S --min-runs N --check ... --who --reason`. */
export function startCommand(agent: string, opts: StartOptions & RolloutFlags): Promise<number> {
  const req = parseStart(opts);
  const { current, others } = agentOf(agent);
  if (others.length && req.candidate !== current && !others.includes(req.candidate))
    throw new UsageError(`--candidate: ${agent} declares versions ${[current, ...others].join(', ')}, not ${req.candidate}`);
  if (!others.length)
    process.stderr.write(`wakegate: ${agent} declares no other versions in this deployment: its runs stay on ${current} until a worker runs the candidate\n`);
  return act(agent, opts, { kind: 'start', ...req });
}

/** `wakegate rollout <agent> step --share S --who --reason`. */
export function stepCommand(agent: string, opts: { share?: string } & RolloutFlags): Promise<number> {
  return act(agent, opts, { kind: 'step', ...parseStep(opts) });
}

/** `wakegate rollout <agent> promote --who --reason`. */
export function promoteCommand(agent: string, opts: RolloutFlags): Promise<number> {
  return act(agent, opts, { kind: 'promote', ...personOf(opts) });
}

/** `wakegate rollout <agent> rollback [--stop] --who --reason`. */
export function rollbackCommand(agent: string, opts: RolloutFlags & { stop?: boolean }): Promise<number> {
  return act(agent, opts, { kind: 'rollback', ...personOf(opts), ...(opts.stop ? { stopInFlight: true } : {}) });
}

/** `wakegate rollout <agent> status`: phase, share, the two versions' figures side by side with each check's verdict, the history. Exit 3 with no rollout. */
export function statusCommand(agent: string, opts: RolloutFlags): Promise<number> {
  agentOf(agent);
  return withClient(async (client, taskQueue) => {
    const status = await rolloutStatus(client, taskQueue, agent);
    if (!status) {
      printJson({ agent, rollout: null, error: { code: 'no_rollout', message: `${agent} has no rollout on ${taskQueue}` } });
      process.stderr.write(`wakegate: ${agent} has no rollout on ${taskQueue}: wakegate rollout ${agent} start ...\n`);
      return ExitCode.refused;
    }
    const { state } = status;
    const out = {
      agent,
      view: status.view,
      figures: sideBySide(status),
      fleet: state.fleet,
      minRuns: state.minRuns,
      checks: state.checks,
      history: state.history,
    };
    if (asJson(opts)) printJson(out);
    else {
      const f = out.figures;
      process.stdout.write(`${agent}: ${state.phase}, ${Math.round(state.share * 1000) / 10}% on ${state.candidate ?? '-'} (current ${state.current})\n`);
      for (const row of f.rows) process.stdout.write(`  ${row.label.padEnd(16)} ${row.current.padEnd(20)} ${row.candidate}\n`);
      for (const c of f.checks) process.stdout.write(`  check ${c.name}: ${c.status} (${c.why})\n`);
      for (const h of state.history.slice(-10)) process.stdout.write(`  #${h.id} ${h.at} ${h.kind} by ${h.who}: ${h.reason}\n`);
    }
    return ExitCode.ok;
  });
}
