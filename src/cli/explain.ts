import { loadConfig } from '../config/config';
import { connectClient } from '../config/temporal';
import { GateInputError } from '../gate/errors';
import { agentOf, TrailRequestError, wakeTrail } from '../trail/trail';
import { app } from './app';
import { ExitCode, printJson, UsageError } from './output';
import { trailTable } from './trail-table';

/** The options of `wakegate explain`, as commander parses them. */
export interface ExplainOptions {
  since: string;
  maxRuns: string;
  maxEvents: string;
  json?: boolean;
}

const whole = (text: string, flag: string): number => {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1 || n > 1000) throw new UsageError(`${flag} must be a whole number from 1 to 1000`);
  return n;
};

/** A refusal of the request, as the CLI's shared errors (exit 2): an unknown agent keeps its own code. */
function asCliError(err: unknown): unknown {
  if (!(err instanceof TrailRequestError)) return err;
  if (err.code === 'usage') return new UsageError(err.message);
  return new GateInputError(err.code, err.message, err.issues);
}

/**
 * `wakegate explain <agent> <wakeKey> [--since 24h] [--max-runs 20] [--max-events 200] [--json]`:
 * the decision trail of one wake key (src/trail/). JSON when `--json` is given or stdout is not a
 * terminal, a short timeline table otherwise. Exit 2 for an unknown agent (naming the known ones)
 * or a bad flag, before any connection; exit 3 when nothing is recorded in the window, saying where it looked.
 */
export async function explain(agent: string, wakeKey: string, opts: ExplainOptions): Promise<number> {
  const maxRuns = whole(opts.maxRuns, '--max-runs');
  const maxEvents = whole(opts.maxEvents, '--max-events');
  const agents = app().agents;
  try {
    agentOf(agents, agent);
  } catch (err) {
    throw asCliError(err);
  }
  const client = await connectClient(loadConfig());
  try {
    const trail = await wakeTrail(client, agents, { agent, wakeKey, since: opts.since, maxRuns, maxEvents }).catch((err: unknown) => {
      throw asCliError(err);
    });
    const asJson = opts.json === true || !process.stdout.isTTY;
    if (!trail.found) {
      const message = `nothing is recorded about ${agent} / ${wakeKey} since ${trail.window.since}; looked at: ${trail.looked.join('; ')}`;
      if (asJson) printJson({ ...trail, error: { code: 'not_found', message } });
      else process.stdout.write(trailTable(trail));
      process.stderr.write(`wakegate: ${message}\n`);
      return ExitCode.refused;
    }
    if (asJson) printJson(trail);
    else process.stdout.write(trailTable(trail));
    return ExitCode.ok;
  } finally {
    await client.connection.close();
  }
}
