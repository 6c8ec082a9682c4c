import { Command, CommanderError } from 'commander';
import { registerCommands } from './commands';
import { ExitCode, reportError, UsageError } from './output';

const program = new Command('wakegate')
  .description('The trigger layer for background agents: every wake passes the gate before any model token is spent.')
  .showHelpAfterError()
  .exitOverride();

registerCommands(program);

program.parseAsync(process.argv).catch((err: unknown) => {
  if (err instanceof CommanderError) {
    if (err.exitCode === 0) return;
    process.exitCode = reportError(new UsageError(err.message.replace(/^error: /, '')));
    return;
  }
  process.exitCode = reportError(err);
});

export { ExitCode };
