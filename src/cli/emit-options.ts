import type { Command } from 'commander';

/**
 * The options of `wakegate emit`, on `cmd`: the command itself (src/cli/commands.ts) and a resident
 * process that answers emits for it (src/cli/resident.ts) parse a call alike.
 */
export function defineEmit(cmd: Command): Command {
  return cmd
    .description('Send one event through the gate and print the decision as JSON; or, with --file, every event of a file of JSON lines, one answer line each.')
    .option('--source <source>', 'trigger source, e.g. ping (required without --file)')
    .option('--entity <entity>', 'what the event is about, e.g. campaign-42 (required without --file)')
    .option('--type <type>', 'what happened, e.g. config.changed (required without --file)')
    .option('--occurred-at <iso>', 'when it happened (ISO-8601 with zone); default: now')
    .option('--payload <json|@file|->', 'event payload, a JSON object: inline, @path to read a file, or - to read standard input')
    .option('--delivery-id <id>', 'delivery id for tracing (never part of the key)')
    .option('--entity-version <n>', "the entity's version as the source counts it: an older one than already seen is answered stale")
    .option('--agent <agent>', 'wake only this agent (default: every agent the source wakes)')
    .option('--wait', 'wait for the run that took the event to end and include its result and terminalReason')
    .option('--timeout <duration>', 'with --wait: wait at most this long (e.g. 30s, 5m); exit 5 if the run has not ended')
    .option(
      '--file <path|->',
      'admit every event of a file of JSON lines (- for standard input), each {source, entity, type, occurredAt, payload?, deliveryId?, ' +
        'version?, agent?}; one answer line each, in order; exit 0 when all are admitted, else the most serious: 1 some failed, ' +
        '4 Temporal unreachable, 2 some lines bad, 3 some refused',
    )
    .option('--concurrency <n>', 'with --file: events admitted at once (1 to 256)', '32');
}
