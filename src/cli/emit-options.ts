import type { Command } from 'commander';

/** How to deliver one event again, shown after `emit --help`. */
const EMIT_REDELIVERY_HELP = `
Redelivering the same event:
  An event's key is its source, type, entity and the trigger's time bucket of --occurred-at. Without
  --occurred-at the emit itself is the event, happening now: the same command run again later is a
  new event, and may run again. To deliver one event again (a retry, a redelivery), repeat it with
  the same --source, --type, --entity and --occurred-at, and the same --payload (its fingerprint
  fields): the answer is the event's recorded decision (completed, in_progress, ...), and nothing
  runs twice (within the retention, or a coalescing agent's dedupHorizon). A different payload under
  the same key is refused: mismatch (exit 3).
  Example:
    wakegate emit --source tickets --entity T-7 --type opened --occurred-at 2026-12-01T09:30:00Z --payload @t7.json
    (the same line again: the same eventKey, the same run)`;

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
    .option(
      '--wait',
      'wait for the run that took the event to end and include its result and terminalReason; exit 7 if it ended failed, ' +
        '8 if escalated, blocked, budget_exhausted, cancelled or discarded',
    )
    .option('--timeout <duration>', 'with --wait: wait at most this long (e.g. 30s, 5m); exit 5 if the run has not ended')
    .option(
      '--file <path|->',
      'admit every event of a file of JSON lines (- for standard input), each {source, entity, type, occurredAt, payload?, deliveryId?, ' +
        'version?, agent?}; one answer line each, in order; exit 0 when all are admitted, else the most serious: 1 some failed, ' +
        '4 Temporal unreachable, 2 some lines bad, 3 some refused',
    )
    .option('--concurrency <n>', 'with --file: events admitted at once (1 to 256)', '32')
    .addHelpText('after', EMIT_REDELIVERY_HELP);
}
