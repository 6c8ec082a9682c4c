import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Worker } from '@temporalio/worker';
import { temporal } from '@temporalio/proto';
import { quietRuntime, workflowBundle } from './helpers/env';

/*
 * Replay the committed histories (test/replay/histories/*.json, recorded by
 * test/replay/record-histories.ts) of the wake workflow, the coalescer and an admission record against
 * today's workflow code: a non-deterministic change fails here.
 */
const dir = path.join(__dirname, 'replay', 'histories');
const files = readdirSync(dir).filter((f) => f.endsWith('.json')).sort();

describe('replay over committed histories', () => {
  test('there are histories to replay', () => {
    assert.ok(files.length >= 3, `expected committed histories in ${dir}`);
  });
  for (const file of files) {
    test(`replays ${file} deterministically`, async () => {
      quietRuntime();
      const json = JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as { events: unknown[] };
      assert.ok(json.events.length >= 5, `${file} has ${json.events.length} events`);
      // Built with @temporalio/proto's own runtime: the SDK's historyFromJSON uses another protobufjs copy here.
      const history = temporal.api.history.v1.History.fromObject(json);
      await Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history, file);
    });
  }
});
