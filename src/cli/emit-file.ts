import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { loadConfig } from '../config/config';
import { app } from './app';
import { FileTally, answered, failed, parseEventLine, type LineOutcome } from './ndjson';
import { stdio, UsageError, type Out } from './output';
import type { Gate } from '../gate/gate';
import { isUnreachable } from './unreachable';
import type { EmitOptions } from './emit';

/** The options of `wakegate emit --file`: the single event's options must not be given with it. */
export type EmitFileOptions = Partial<EmitOptions> & { concurrency: string };

/** The flags that describe one event (or wait for its run): each line of the file says its own. */
const SINGLE_EVENT_FLAGS = ['source', 'entity', 'type', 'occurredAt', 'payload', 'deliveryId', 'entityVersion', 'agent', 'wait', 'timeout'] as const;

function parseConcurrency(text: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || n < 1 || n > 256) throw new UsageError(`--concurrency must be a whole number from 1 to 256, got "${text}"`);
  return n;
}

/**
 * `wakegate emit --file <path|->`: one process admits every event of a file of JSON lines through the
 * deployment's gate (`app.gate(client, taskQueue).admit(event)`), `--concurrency` at a time, and
 * prints one answer line per event in the file's order (`{"line": n, ...answer}` or
 * `{"line": n, "error": {...}}`); a bad line is answered with its line number and the others go on.
 * Each line carries its own `occurredAt`, so the same file sent again is the same events with the
 * same keys, answered from the runs they started. Exit status: src/cli/ndjson.ts `fileExitCode`.
 */
export async function emitFile(file: string, opts: EmitFileOptions, out: Out = stdio): Promise<number> {
  const given = SINGLE_EVENT_FLAGS.filter((k) => opts[k] !== undefined);
  if (given.length)
    throw new UsageError(
      `--file takes each event from its line: drop ${given.map((k) => `--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`).join(', ')}`,
    );
  const concurrency = parseConcurrency(opts.concurrency);
  const config = loadConfig();
  const wakegate = app();
  const input = file === '-' ? process.stdin : createReadStream(file);
  const opened = new Promise<void>((resolve, reject) => {
    if (file === '-') return resolve();
    input.once('open', () => resolve());
    input.once('error', (err: Error) => reject(new UsageError(`--file ${file}: cannot read the file: ${err.message}`)));
  });
  await opened;
  const { connectClient } = await import('../config/temporal.js');
  const client = await connectClient(config);
  const gate = wakegate.gate(client, config.taskQueue);
  try {
    const tally = await admitLines(gate, createInterface({ input, crlfDelay: Infinity }), concurrency, out);
    out.stderr(`${tally.summary()}\n`);
    return tally.exitCode;
  } finally {
    await gate.close().catch(() => undefined);
    await client.connection.close();
  }
}

/**
 * Admit the events of `lines`, at most `concurrency` in flight, and write each answer line as soon as
 * every line before it is answered (a slow event holds back the printing, not the admitting of the
 * ones in flight beside it).
 */
export async function admitLines(gate: Pick<Gate, 'admit'>, lines: AsyncIterable<string>, concurrency: number, out: Out): Promise<FileTally> {
  const tally = new FileTally();
  const window: Promise<{ line: number; text: string; outcome: LineOutcome }>[] = [];
  const print = async () => {
    const { line, text, outcome } = await window.shift()!;
    tally.add(line, outcome);
    out.stdout(`${text}\n`);
  };
  let n = 0;
  for await (const text of lines) {
    n++;
    const parsed = parseEventLine(text, n);
    if (!parsed) continue;
    const line = n;
    const answer =
      'error' in parsed
        ? Promise.resolve(failed(line, parsed.error, isUnreachable))
        : gate.admit(parsed.event, parsed.agent !== undefined ? { agent: parsed.agent } : {}).then(
            (a) => {
              for (const w of a.wakes) if (w.held) out.stderr(`wakegate: line ${line}: ${w.agent}: held by the supervisor (${w.held.reason})\n`);
              return answered(line, a);
            },
            (err: unknown) => failed(line, err, isUnreachable),
          );
    window.push(answer.then((a) => ({ line, ...a })));
    if (window.length >= concurrency) await print();
  }
  while (window.length) await print();
  return tally;
}
