import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { createServer, type AddressInfo } from 'node:net';
import path from 'node:path';
import { freePort } from '../../src/testing/dev-server';
import { Gate } from '../../src/gate/gate';
import type { RunResult } from '../../src/core/run-types';
import { eventually, useDevEnv, unique, withWorker } from '../helpers/env';
import { runCli, type CliRun } from '../helpers/cli';
import { coalescing } from '../helpers/agents';
import { activitiesOf, registryOf } from '../helpers/app';
import fanoutApp from '../fixtures/fanout-app';

const env = useDevEnv();

describe('wakegate emit, run as a subprocess', () => {
  test('prints one JSON object per call with the decision; exit codes tell refusals apart', async () => {
    const taskQueue = unique('cli');
    const cliEnv = { TEMPORAL_ADDRESS: env.server.address, WAKEGATE_TASK_QUEUE: taskQueue };
    const entity = unique('cli');
    const base = ['emit', '--source', 'ping', '--entity', entity, '--type', 'check', '--occurred-at', '2026-12-02T14:05:00+01:00'];
    await withWorker(env.nativeConnection, taskQueue, async () => {
      const first = await runCli([...base, '--payload', '{"note":"hello"}', '--delivery-id', 'cli-1', '--wait'], cliEnv);
      assert.equal(first.code, 0, first.stderr);
      assert.equal(first.json.decision, 'started');
      assert.equal(first.json.eventKey, `ping/check/${entity}/2026-12-02T13:00:00Z`);
      assert.equal(first.json.runKey, `canary@${String(first.json.eventKey)}`);
      assert.equal(first.json.wakeKey, entity);
      assert.equal(typeof first.json.runId, 'string');
      assert.equal(first.json.terminalReason, 'success');
      assert.deepEqual((first.json.result as { deliveryIds: string[] }).deliveryIds, ['cli-1']);

      const again = await runCli([...base, '--payload', '{"note":"hello"}', '--delivery-id', 'cli-2'], cliEnv);
      assert.equal(again.code, 0);
      assert.equal(again.json.decision, 'completed');
      assert.equal(again.json.runId, first.json.runId);
      assert.equal((again.json.result as { terminalReason: string }).terminalReason, 'success');

      const mismatch = await runCli([...base, '--payload', '{"note":"changed"}'], cliEnv);
      assert.equal(mismatch.code, 3);
      assert.equal(mismatch.json.decision, 'mismatch');
      assert.match(mismatch.stderr, /different inputs/);
    });
  });

  test('bad input exits 2 with the field named, before any connection is made', async () => {
    const nowhere = { TEMPORAL_ADDRESS: '127.0.0.1:1' };
    const bigFile = path.join(await mkdtemp(path.join(tmpdir(), 'wakegate-cli-')), 'big.json');
    await writeFile(bigFile, JSON.stringify({ blob: 'x'.repeat(300 * 1024) }));
    const cases: [string[], string, RegExp][] = [
      [['emit', '--source', 'nope', '--entity', 'e', '--type', 't'], 'unknown_source', /accepts .*ping/],
      [['emit', '--source', 'ping', '--entity', 'e', '--type', 't', '--payload', '{nope'], 'usage', /--payload is not valid JSON/],
      [['emit', '--source', 'ping', '--entity', 'e', '--type', 't', '--payload', '[1]'], 'usage', /JSON object/],
      [['emit', '--source', 'ping', '--entity', 'e', '--type', 't', '--payload', '{"holdMs":"long"}'], 'invalid_payload', /payload\.holdMs/],
      [['emit', '--source', 'ping', '--entity', 'e', '--type', 't', '--occurred-at', 'yesterday'], 'invalid_event', /occurredAt/],
      [['emit', '--source', 'ping', '--type', 't'], 'usage', /--entity/],
      // Deeper than any stack: refused by the gate's iterative depth check, not a crash (exit 1).
      [
        ['emit', '--source', 'ping', '--entity', 'e', '--type', 't', '--payload', `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`],
        'payload_too_deep',
        /deeper than 32 levels/,
      ],
      [['emit', '--source', 'ping', '--entity', 'e', '--type', 't', '--payload', `@${bigFile}`], 'payload_too_large', /over the limit of 262144 bytes/],
      [['emit', '--source', 'ping', '--entity', 'e', '--type', 't', '--payload', '@/nonexistent/payload.json'], 'usage', /cannot read the file/],
      [
        ['emit', '--source', 'ping', '--entity', 'e', '--type', 't', '--occurred-at', new Date(Date.now() + 3_600_000).toISOString()],
        'occurred_at_out_of_range',
        /occurredAt .* lies in the future/,
      ],
      [
        ['emit', '--source', 'ping', '--entity', 'e', '--type', 't', '--occurred-at', '1999-12-31T23:00:00Z'],
        'occurred_at_out_of_range',
        /occurredAt .* is before 2000/,
      ],
    ];
    for (const [args, code, message] of cases) {
      const run = await runCli(args, nowhere);
      assert.equal(run.code, 2, `${args.join(' ')}: ${run.stdout}`);
      assert.equal((run.json.error as { code: string }).code, code);
      assert.match((run.json.error as { message: string }).message, message);
    }
  });

  test('a coalescing agent: decisions name the run and its state; `wakegate coalescer` shows the pending batch', async () => {
    const taskQueue = unique('cli-coalesce');
    const cliEnv = { TEMPORAL_ADDRESS: env.server.address, WAKEGATE_TASK_QUEUE: taskQueue };
    const campaign = unique('cli-campaign');
    // The reporter's own policy: a 10 s debounce, so the batch is still pending while the test looks.
    await withWorker(env.nativeConnection, taskQueue, async () => {
      const change = await runCli(
        [
          'emit',
          '--source',
          'campaigns',
          '--entity',
          campaign,
          '--type',
          'config.changed',
          '--occurred-at',
          '2026-12-02T09:00:00Z',
          '--payload',
          '{"dashboards":["reach"]}',
          '--entity-version',
          '4',
        ],
        cliEnv,
      );
      assert.equal(change.code, 0, change.stderr);
      assert.equal(change.json.decision, 'started');
      assert.equal(change.json.wakeKey, campaign);
      assert.equal(change.json.runState, 'pending');
      assert.ok((change.json.startsInMs as number) > 5000, 'the reporter debounces for 10 s');
      const report = await runCli(
        ['emit', '--source', 'campaigns', '--entity', campaign, '--type', 'report.due', '--occurred-at', '2026-12-02T09:00:05Z'],
        cliEnv,
      );
      assert.equal(report.json.decision, 'coalesced');
      assert.equal(report.json.runKey, change.json.runKey);
      const old = await runCli(
        [
          'emit',
          '--source',
          'campaigns',
          '--entity',
          campaign,
          '--type',
          'config.changed',
          '--occurred-at',
          '2026-12-02T08:59:00Z',
          '--payload',
          '{"dashboards":["spend"]}',
          '--entity-version',
          '3',
        ],
        cliEnv,
      );
      assert.equal(old.code, 0);
      assert.equal(old.json.decision, 'stale');
      assert.equal(old.json.newestVersion, 4);
      const shown = await runCli(['coalescer', 'campaign-reporter', campaign], cliEnv);
      assert.equal(shown.code, 0, shown.stderr);
      assert.equal(shown.json.running, true);
      const pending = shown.json.pending as { runKey: string; events: { eventKey: string }[] };
      assert.equal(pending.runKey, change.json.runKey);
      assert.deepEqual(
        pending.events.map((e) => e.eventKey),
        [change.json.eventKey, report.json.eventKey],
      );
      assert.deepEqual(shown.json.counts, { offered: 3, started: 1, coalesced: 1, skipped: 0, stale: 1, runs: 0 });
      const bad = await runCli(['emit', '--source', 'campaigns', '--entity', campaign, '--type', 'config.changed', '--entity-version', 'v2'], cliEnv);
      assert.equal(bad.code, 2);
    });
  });

  test('--payload @file and --payload - read a payload past the 128 KiB a shell argument can carry; both are the same event', async () => {
    const taskQueue = unique('cli-payload');
    const cliEnv = { TEMPORAL_ADDRESS: env.server.address, WAKEGATE_TASK_QUEUE: taskQueue };
    const entity = unique('cli-payload');
    const payload = JSON.stringify({ note: 'big', blob: 'y'.repeat(200 * 1024) }, null, 2);
    const file = path.join(await mkdtemp(path.join(tmpdir(), 'wakegate-cli-')), 'payload.json');
    await writeFile(file, payload);
    const base = ['emit', '--source', 'ping', '--entity', entity, '--type', 'check', '--occurred-at', '2026-12-02T14:05:00Z'];
    await withWorker(env.nativeConnection, taskQueue, async () => {
      const fromFile = await runCli([...base, '--payload', `@${file}`, '--delivery-id', 'file', '--wait'], cliEnv);
      assert.equal(fromFile.code, 0, fromFile.stderr);
      assert.equal(fromFile.json.decision, 'started');
      assert.equal(fromFile.json.terminalReason, 'success');
      // The same bytes on stdin: the same fingerprint, so the stored outcome of the same run.
      const fromStdin = await runCli([...base, '--payload', '-', '--delivery-id', 'stdin'], cliEnv, 60_000, payload);
      assert.equal(fromStdin.code, 0, fromStdin.stderr);
      assert.equal(fromStdin.json.decision, 'completed');
      assert.equal(fromStdin.json.runId, fromFile.json.runId);
      assert.equal(fromStdin.json.fingerprint, fromFile.json.fingerprint);
    });
  });

  test('--wait with no worker polling exits 4 at once, naming the queue; with one, --timeout exits 5 while the run goes on', async () => {
    const taskQueue = unique('cli-wait');
    const cliEnv = { TEMPORAL_ADDRESS: env.server.address, WAKEGATE_TASK_QUEUE: taskQueue };
    const base = ['emit', '--source', 'ping', '--type', 'check', '--occurred-at', '2026-12-02T15:00:00Z', '--wait'];
    const t0 = Date.now();
    const alone = await runCli([...base, '--entity', unique('nobody')], cliEnv);
    assert.equal(alone.code, 4, alone.stderr);
    assert.equal(alone.json.decision, 'started', 'the event is taken all the same');
    assert.match(alone.stderr, new RegExp(`no worker polls task queue "${taskQueue}"`));
    assert.ok(Date.now() - t0 < 30_000, 'it does not wait');
    await withWorker(env.nativeConnection, taskQueue, async () => {
      const slow = await runCli([...base, '--entity', unique('slow'), '--payload', '{"holdMs":8000}', '--timeout', '2s'], cliEnv);
      assert.equal(slow.code, 5, slow.stderr);
      assert.deepEqual(slow.json.waited, { timedOut: true, afterMs: 2000 });
      assert.match(slow.stderr, /had not ended after --timeout 2s/);
      const unbounded = await runCli([...base, '--entity', unique('later')], cliEnv);
      assert.equal(unbounded.code, 0, unbounded.stderr);
      assert.equal(unbounded.json.terminalReason, 'success');
    });
    const misuse = await runCli(['emit', '--source', 'ping', '--entity', 'e', '--type', 't', '--timeout', '5s'], cliEnv);
    assert.equal(misuse.code, 2);
    assert.match(misuse.stderr, /--timeout bounds --wait/);
  });

  test('an unreachable Temporal exits 4 with where it looked and how to start one', async () => {
    const port = await freePort();
    const run = await runCli(['emit', '--source', 'ping', '--entity', 'e', '--type', 't'], {
      TEMPORAL_ADDRESS: `127.0.0.1:${port}`,
      WAKEGATE_CONNECT_TIMEOUT_MS: '1500',
    });
    assert.equal(run.code, 4);
    const err = run.json.error as { code: string; message: string };
    assert.equal(err.code, 'temporal_unreachable');
    assert.match(err.message, new RegExp(`127\\.0\\.0\\.1:${port}`));
    assert.match(err.message, /temporal-dev\.sh up/);
  });

  test('wakegate dev whose webhook port is taken exits with the reason, its worker stopped, instead of running on', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    try {
      const port = (taken.address() as AddressInfo).port;
      // runCli fails the test if the command does not end within its bound (60 s).
      const run = await runCli(['dev', '--no-server'], {
        TEMPORAL_ADDRESS: env.server.address,
        WAKEGATE_TASK_QUEUE: unique('dev-port-taken'),
        WAKEGATE_INGRESS_PORT: String(port),
        WAKEGATE_OPERATOR_PORT: '0',
        // --no-server takes no dev secrets: the example sources' own are set.
        WAKEGATE_WEBHOOK_SECRET_CAMPAIGNS: 'whsec_Y2xpLXRlc3QtY2FtcGFpZ25zLXNlY3JldA==',
        WAKEGATE_WEBHOOK_SECRET_GITHUB: 'cli-test-github-secret',
      });
      assert.equal(run.code, 1);
      assert.match((run.json.error as { message: string }).message, /EADDRINUSE/);
    } finally {
      taken.close();
    }
  });
  test('wakegate dev --no-server (a Temporal of its own choosing) takes no dev secret: an unset secret stops it, naming the variable', async () => {
    const run = await runCli(['dev', '--no-server'], {
      TEMPORAL_ADDRESS: env.server.address,
      WAKEGATE_TASK_QUEUE: unique('dev-no-server-secrets'),
      WAKEGATE_INGRESS_PORT: '0',
      WAKEGATE_OPERATOR_PORT: '0',
    });
    assert.equal(run.code, 1, run.stderr);
    assert.match((run.json.error as { message: string }).message, /needs its secret in WAKEGATE_WEBHOOK_SECRET_CAMPAIGNS/);
  });
});

describe('wakegate kill and rearm by key, run as a subprocess', () => {
  const errorOf = (run: CliRun) => run.json.error as { code: string; message: string };
  const resultOf = (workflowId: string) => env.client.workflow.getHandle(workflowId).result() as Promise<RunResult>;

  test('kill <event key>: the one run the event woke; unknown keys and IDs, and rearm of an unknown key, exit 3', async () => {
    const taskQueue = unique('cli-kill');
    const cliEnv = { TEMPORAL_ADDRESS: env.server.address, WAKEGATE_TASK_QUEUE: taskQueue };
    const entity = unique('cli-kill');
    await withWorker(env.nativeConnection, taskQueue, async () => {
      const emitted = await runCli(
        ['emit', '--source', 'ping', '--entity', entity, '--type', 'check', '--occurred-at', '2026-12-02T14:05:00Z', '--payload', '{"holdMs":60000}'],
        cliEnv,
      );
      assert.equal(emitted.code, 0, emitted.stderr);
      const eventKey = String(emitted.json.eventKey);
      const killed = await runCli(['kill', eventKey, '--reason', 'by its event', '--who', 'ops'], cliEnv);
      assert.equal(killed.code, 0, killed.stderr);
      assert.equal(killed.json.accepted, true);
      assert.equal(killed.json.workflowId, `canary@${eventKey}`);
      assert.equal(killed.json.eventKey, eventKey);
      assert.equal(killed.json.agent, 'canary');
      const result = await resultOf(`canary@${eventKey}`);
      assert.equal(result.terminalReason, 'cancelled');
      assert.deepEqual(result.killedBy, { who: 'ops', reason: 'by its event' });

      const again = await runCli(['kill', eventKey, '--reason', 'twice'], cliEnv);
      assert.equal(again.code, 3, again.stdout);
      assert.equal(again.json.workflowId, `canary@${eventKey}`);
      const otherAgent = await runCli(['kill', eventKey, '--reason', 'r', '--agent', 'nobody'], cliEnv);
      assert.equal(otherAgent.code, 3, otherAgent.stdout);
      assert.match(errorOf(otherAgent).message, /woke no run of nobody; it woke canary \(canary@/);
      const wrongAgent = await runCli(['kill', `canary@${eventKey}`, '--reason', 'r', '--agent', 'nobody'], cliEnv);
      assert.equal(wrongAgent.code, 2, wrongAgent.stdout);
      assert.match(errorOf(wrongAgent).message, /is a run of canary, not of nobody/);

      const unknownKey = `ping/check/${unique('nothing')}/2026-12-02T14:00:00Z`;
      for (const key of [unknownKey, `canary@${unknownKey}`, 'not a key at all']) {
        const unknown = await runCli(['kill', key, '--reason', 'r'], cliEnv);
        assert.equal(unknown.code, 3, `${key}: ${unknown.stdout}`);
        assert.equal(errorOf(unknown).code, 'refused');
        assert.match(errorOf(unknown).message, /no run .* and no run took an event with that key/);
        const rearm = await runCli(['rearm', key], cliEnv);
        assert.equal(rearm.code, 3, `${key}: ${rearm.stdout}`);
        assert.equal(errorOf(rearm).code, 'refused');
        assert.match(errorOf(rearm).message, /^no workflow .*: rearm takes a closed run's workflow ID/);
      }
    });
  });

  test('kill <event key> of a coalesced event: the run that absorbed it, refused while its batch has not started', async () => {
    const agents = coalescing('canary', { debouncePeriodMs: 2000, maxWaitMs: 5000 });
    const taskQueue = unique('cli-kill-coalesced');
    const cliEnv = { TEMPORAL_ADDRESS: env.server.address, WAKEGATE_TASK_QUEUE: taskQueue };
    const entity = unique('cli-kill-coalesced');
    const gate = new Gate({ client: env.client, taskQueue, registry: registryOf(agents) });
    const ping = (type: string) => ({ source: 'ping', entity, type, occurredAt: '2026-12-02T14:05:00Z', payload: { holdMs: 60_000 } });
    await withWorker(
      env.nativeConnection,
      taskQueue,
      async () => {
        const first = await gate.admit(ping('first'));
        const second = await gate.admit(ping('second'));
        assert.equal(first.decision, 'started');
        assert.equal(second.decision, 'coalesced');
        assert.equal(second.runKey, first.runKey, 'one run for both');
        assert.notEqual(second.eventKey, first.eventKey);

        const early = await runCli(['kill', second.eventKey, '--reason', 'too early'], cliEnv);
        assert.equal(early.code, 3, early.stdout);
        assert.equal(early.json.workflowId, first.runKey);
        assert.match(errorOf(early).message, /has not started yet/);

        await eventually(
          () =>
            env.client.workflow
              .getHandle(first.runKey)
              .describe()
              .catch(() => undefined),
          (d) => d?.status.name === 'RUNNING',
          15_000,
          'the batch run started',
        );
        const killed = await runCli(['kill', second.eventKey, '--reason', 'absorbed event', '--who', 'ops'], cliEnv);
        assert.equal(killed.code, 0, killed.stderr);
        assert.equal(killed.json.workflowId, first.runKey);
        assert.equal(killed.json.eventKey, second.eventKey);
        const result = await resultOf(first.runKey);
        assert.equal(result.terminalReason, 'cancelled');
        assert.deepEqual(
          result.absorbed!.map((e) => e.eventKey),
          [first.eventKey, second.eventKey],
        );
      },
      { activities: activitiesOf({ agents }) },
    );
  });

  test('kill <event key> of an event that woke two agents: exit 2 listing both until --agent names one', async () => {
    const taskQueue = unique('cli-kill-fanout');
    const cliEnv = { TEMPORAL_ADDRESS: env.server.address, WAKEGATE_TASK_QUEUE: taskQueue };
    const fanoutEnv = { ...cliEnv, WAKEGATE_APP: 'test/fixtures/fanout-app.ts' };
    const entity = unique('cli-kill-fanout');
    await withWorker(
      env.nativeConnection,
      taskQueue,
      async () => {
        const emitted = await runCli(['emit', '--source', 'ping', '--entity', entity, '--type', 'check', '--payload', '{"holdMs":60000}'], fanoutEnv);
        assert.equal(emitted.code, 0, emitted.stderr);
        const eventKey = String(emitted.json.eventKey);
        const wakes = emitted.json.wakes as { agent: string; runKey: string; decision: string }[];
        assert.deepEqual(
          wakes.map((w) => [w.agent, w.decision]),
          [
            ['canary', 'started'],
            ['canary-echo', 'started'],
          ],
        );

        const ambiguous = await runCli(['kill', eventKey, '--reason', 'which one?'], fanoutEnv);
        assert.equal(ambiguous.code, 2, ambiguous.stdout);
        assert.equal(errorOf(ambiguous).code, 'ambiguous');
        assert.match(errorOf(ambiguous).message, /woke 2 agents: canary \(canary@.*\), canary-echo \(canary-echo@.*\); name one with --agent/);
        assert.deepEqual(
          (ambiguous.json.runs as { agent: string; workflowId: string }[]).map((r) => [r.agent, r.workflowId]),
          wakes.map((w) => [w.agent, w.runKey]),
        );

        // This checkout's own deployment has no canary-echo: its run is found in the visibility store, once indexed.
        const echo = await eventually(
          () => runCli(['kill', eventKey, '--reason', 'the echo', '--agent', 'canary-echo', '--who', 'ops'], cliEnv),
          (r) => r.code !== 3,
          15_000,
          'the echo run indexed',
        );
        assert.equal(echo.code, 0, echo.stderr);
        assert.equal(echo.json.workflowId, `canary-echo@${eventKey}`);
        const main = await runCli(['kill', eventKey, '--reason', 'the canary', '--agent', 'canary', '--who', 'ops'], fanoutEnv);
        assert.equal(main.code, 0, main.stderr);
        assert.equal(main.json.workflowId, `canary@${eventKey}`);
        const results = await Promise.all(wakes.map((w) => resultOf(w.runKey)));
        assert.deepEqual(
          results.map((r) => [r.terminalReason, r.killedBy?.reason]),
          [
            ['cancelled', 'the canary'],
            ['cancelled', 'the echo'],
          ],
        );
      },
      { activities: fanoutApp.activities() },
    );
  });
});
