import { writeFileSync } from 'node:fs';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import type { RunInput } from '../../src/core/run-types';
import { round, runPool } from './stats';

/**
 * bench:cli's file phase: `wakegate emit --file` against raw `client.workflow.start` in the same run.
 * Raw: EVENTS starts of the run workflow with unique IDs, CONCURRENCY at a time, from the benchmark's
 * own client (loaded and connected already), before and after the file. The file: one `wakegate emit
 * --file` process admitting EVENTS unique events at --concurrency CONCURRENCY through the gate, timed
 * from spawn to exit (its start-up, loading and connecting included). Then the same file again: every
 * answer must come from the runs the first pass started (no `started`), under the same workflow IDs.
 * No worker polls either queue: the start path is measured alone, as in bench:gate.
 */
export interface FilePhaseOptions {
  client: Client;
  events: number;
  concurrency: number;
  tag: string;
  /** Run `wakegate ARGS` with this environment; spawn to exit. */
  wakegate: (args: string[], env: Record<string, string>) => Promise<{ code: number | null; stdout: string; stderr: string; ms: number }>;
  env: Record<string, string>;
}

interface FileRun {
  exitCode: number | null;
  wallMs: number;
  eventsPerSecond: number;
  answerLines: number;
  decisions: Record<string, number>;
  summary: string;
}

export interface FilePhase {
  events: number;
  concurrency: number;
  raw: { before: { wallMs: number; startsPerSecond: number }; after: { wallMs: number; startsPerSecond: number }; startsPerSecond: number };
  file: FileRun;
  rerun: FileRun & { sameWorkflowIds: boolean; newStarts: number };
  ratio: number;
  problems: string[];
}

async function raw(client: Client, taskQueue: string, events: number, concurrency: number, prefix: string) {
  const t0 = performance.now();
  await runPool(events, concurrency, (i) =>
    client.workflow.start('runWorkflow', { workflowId: `${prefix}-${i}`, taskQueue, args: [{ eventKey: `${prefix}-${i}` } as RunInput] }),
  );
  const wallMs = performance.now() - t0;
  return { wallMs: round(wallMs), startsPerSecond: round(events / (wallMs / 1000)) };
}

export async function filePhase(o: FilePhaseOptions): Promise<FilePhase> {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'bench-cli-file-')), 'events.ndjson');
  const lines = Array.from({ length: o.events }, (_, i) =>
    JSON.stringify({ source: 'ping', entity: `file-${o.tag}-${i}`, type: 'bench', occurredAt: '2026-12-02T14:05:00Z', deliveryId: `file-${i}` }),
  );
  writeFileSync(file, `${lines.join('\n')}\n`);
  const env = { ...o.env, WAKEGATE_TASK_QUEUE: `bench-cli-file-${o.tag}` };
  const problems: string[] = [];
  const runFile = async (): Promise<{ run: FileRun; ids: string[] }> => {
    const r = await o.wakegate(['emit', '--file', file, '--concurrency', String(o.concurrency)], env);
    const answers = r.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { line: number; decision?: string; runKey?: string; error?: { message: string } });
    const decisions: Record<string, number> = {};
    for (const a of answers) decisions[a.decision ?? `error`] = (decisions[a.decision ?? 'error'] ?? 0) + 1;
    if (r.code !== 0) problems.push(`emit --file exited ${r.code}: ${r.stderr.trim().slice(0, 300)}`);
    if (answers.length !== o.events) problems.push(`emit --file answered ${answers.length} of ${o.events} lines`);
    if (answers.some((a, i) => a.line !== i + 1)) problems.push('emit --file answered out of order');
    const wallMs = round(r.ms);
    return {
      run: {
        exitCode: r.code,
        wallMs,
        eventsPerSecond: round(o.events / (r.ms / 1000)),
        answerLines: answers.length,
        decisions,
        summary: r.stderr.trim().split('\n').at(-1) ?? '',
      },
      ids: answers.map((a) => a.runKey ?? ''),
    };
  };

  const before = await raw(o.client, `bench-cli-raw-${o.tag}`, o.events, o.concurrency, `raw-a-${o.tag}`);
  const first = await runFile();
  const after = await raw(o.client, `bench-cli-raw-${o.tag}`, o.events, o.concurrency, `raw-b-${o.tag}`);
  const again = await runFile();
  const newStarts = again.run.decisions.started ?? 0;
  const sameWorkflowIds = again.ids.length === first.ids.length && again.ids.every((id, i) => id === first.ids[i]);
  if (newStarts > 0) problems.push(`the same file again started ${newStarts} runs`);
  if (!sameWorkflowIds) problems.push('the same file again was answered under other workflow IDs');
  // The raw rate of the whole phase: both passes' starts over both passes' time.
  const rawRate = round((2 * o.events) / ((before.wallMs + after.wallMs) / 1000));
  return {
    events: o.events,
    concurrency: o.concurrency,
    raw: { before, after, startsPerSecond: rawRate },
    file: first.run,
    rerun: { ...again.run, sameWorkflowIds, newStarts },
    ratio: round(first.run.eventsPerSecond / rawRate, 3),
    problems,
  };
}
