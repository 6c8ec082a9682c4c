import { Command, CommanderError } from 'commander';
import { registerCommands } from './commands';
import { ExitCode, reportError, UsageError } from './output';

/** Shown after the command list: what scripts rely on, and how to call the command so that it never hangs. */
const FOR_SCRIPTS = `
Output: one JSON object on stdout per call (explain at a terminal: a table; --json for JSON); a line on stderr when something is wrong.
Exit codes: ${ExitCode.ok} ok, ${ExitCode.error} error, ${ExitCode.badInput} bad input, ${ExitCode.refused} refused (a mismatch or refusal; a run or key unknown or not open), ${ExitCode.unreachable} Temporal unreachable.

In scripts, call the bin itself, not npx: many \`npx wakegate\` calls in parallel can hang in npx
itself, with no server involved. In a project that depends on wakegate: node_modules/.bin/wakegate
(or wakegate, with node_modules/.bin on PATH); in a checkout of wakegate: node bin/wakegate.js.
Many events from a script: one process, wakegate emit --file events.ndjson (one answer line each); or,
from code, admit events through your deployment's gate instead of spawning the command:
  createWakegate({ ... }).gate(client, taskQueue).admit(event)
After the first emit, a resident process answers the next ones at node's own start-up (WAKEGATE_RESIDENT=off: never).`;

const program = new Command('wakegate')
  .description('The trigger layer for background agents: every wake passes the gate before any model token is spent.')
  .addHelpText('after', FOR_SCRIPTS)
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
