import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode, DefaultLogger, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { temporal } from '@temporalio/proto';
import { quietRuntime, workflowBundle } from '../helpers/env';
import { tracingWorkflowModules } from '../../src/runtime/worker';

/*
 * Replay the committed histories (test/replay/histories/*.json, recorded by
 * test/replay/record-histories.ts) against today's workflow code: a non-deterministic change fails
 * here. Every workflow type with timers, children or continue-as-new has one: the wake workflow, a
 * subagent, the coalescer, a schedule's tick and ledger, the fixed-delay loop,
 * the supervisor (a trip, reset, release, halt and discard) and held runs (released, discarded).
 */
const dir = path.join(__dirname, '..', 'replay', 'histories');

/** The bundle a worker with tracing on runs: the same workflows with tracing's workflow interceptors (workflows/tracing.ts). */
let traced: Promise<WorkflowBundleWithSourceMap> | undefined;
const tracedBundle = () =>
  (traced ??= bundleWorkflowCode({
    workflowsPath: require.resolve('../../workflows'),
    workflowInterceptorModules: tracingWorkflowModules(),
    logger: new DefaultLogger('WARN'),
  }));
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.json'))
  .sort();

describe('replay over committed histories', () => {
  test('every workflow type has a history to replay', () => {
    const types = new Set(
      files.map((f) => {
        const json = JSON.parse(readFileSync(path.join(dir, f), 'utf8')) as {
          events: { workflowExecutionStartedEventAttributes?: { workflowType?: { name?: string } } }[];
        };
        return json.events[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name;
      }),
    );
    const expected = [
      'runWorkflow',
      'subagentWorkflow',
      'coalescerWorkflow',
      'scheduleTickWorkflow',
      'scheduleLedgerWorkflow',
      'fixedDelayWorkflow',
      'supervisorWorkflow',
      'rolloutWorkflow',
    ];
    assert.deepEqual(
      expected.filter((t) => !types.has(t)),
      [],
      `histories in ${dir} cover ${[...types].join(', ')}`,
    );
  });
  for (const file of files) {
    test(`replays ${file} deterministically`, async () => {
      quietRuntime();
      // `workflowId` is recorded for a workflow that reads its own ID (the tick); others replay under the file name.
      const json = JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as { workflowId?: string; events: unknown[] };
      assert.ok(json.events.length >= 5, `${file} has ${json.events.length} events`);
      // Built with @temporalio/proto's own runtime: the SDK's historyFromJSON uses another protobufjs copy here.
      const history = temporal.api.history.v1.History.fromObject(json);
      await Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, json.workflowId ?? file);
    });
    // Histories recorded with tracing off replay on a worker with it on: its interceptors add spans, never commands.
    test(`replays ${file} with the tracing interceptors`, async () => {
      quietRuntime();
      const json = JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as { workflowId?: string; events: unknown[] };
      const history = temporal.api.history.v1.History.fromObject(json);
      await Worker.runReplayHistory({ workflowBundle: await tracedBundle() }, history, json.workflowId ?? file);
    });
  }
});
