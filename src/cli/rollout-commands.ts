import type { Command } from 'commander';
import type { RolloutFlags } from './rollout';
import type { StartOptions } from './rollout-args';
import { UsageError } from './output';

const ACTIONS = ['start', 'step', 'promote', 'rollback', 'status'] as const;
type Action = (typeof ACTIONS)[number];

const collect = (value: string, previous: string[] = []) => [...previous, value];

/**
 * `wakegate rollout <agent> start|step|promote|rollback|status`: a rollout of an agent's candidate
 * version, by a person (`--who`, `--reason`). One command with the action as an argument: commander
 * dispatches subcommands on the first word, which here is the agent.
 */
export function registerRolloutCommands(program: Command, run: (fn: () => Promise<number>) => Promise<void>): void {
  program
    .command('rollout <agent> <action>')
    .description(
      'Roll out a candidate version of an agent to a share of its wake keys, under evidence checks that roll it back by themselves. ' +
        'Actions: start (--candidate --share [--min-runs] --check ...), step (--share), promote, rollback [--stop], status. ' +
        'A person acts with --who and --reason; a refusal is exit 3.',
    )
    .option('--candidate <version>', 'start: the version to roll out')
    .option('--share <0..1>', 'start, step: the fraction of wake keys on the candidate (0.2 for 20%)')
    .option('--min-runs <n>', "start: candidate runs a promote needs in the step's window", '1')
    .option(
      '--check <spec>',
      'start: an evidence check, repeatable: metric[:name=N][:margin=X][:factor=X][:bound=X][:min=N][:onFail=finish|stop], e.g. non_success:margin=0.2:min=5',
      collect,
    )
    .option('--stop', "rollback: also stop the candidate's runs in flight")
    .option('--who <name>', 'the person acting')
    .option('--reason <why>', 'why')
    .option('--json', 'print JSON even at a terminal')
    .action((agent: string, action: string, opts: StartOptions & RolloutFlags & { stop?: boolean }) =>
      run(async () => {
        if (!(ACTIONS as readonly string[]).includes(action)) throw new UsageError(`the action is one of ${ACTIONS.join(', ')}, not "${action}"`);
        const cli = await import('./rollout.js');
        switch (action as Action) {
          case 'start':
            return cli.startCommand(agent, opts);
          case 'step':
            return cli.stepCommand(agent, opts);
          case 'promote':
            return cli.promoteCommand(agent, opts);
          case 'rollback':
            return cli.rollbackCommand(agent, opts);
          case 'status':
            return cli.statusCommand(agent, opts);
        }
      }),
    );
}
