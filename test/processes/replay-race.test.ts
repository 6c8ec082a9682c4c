import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { WorkflowFailedError } from '@temporalio/client';
import { eventually, useDevEnv, unique, withWorker } from '../helpers/env';
import { runCli } from '../helpers/cli';
import { trackerService } from '../../examples/incident-triage/tracker';
import ticketApp from '../fixtures/ticket-app';

/*
 * Two `wakegate replay` processes at the same moment, on the real dev server: for each failed run,
 * one of them starts its replay and the other is answered from it; no run executes twice and no
 * ticket is filed twice. Each process reads the failed execution and starts its successor on its own;
 * what keeps them to one start is Temporal's (conflict FAIL, and one start request ID per run and
 * epoch, src/gate/again-request.ts).
 */
const env = useDevEnv();
const tracker = trackerService();
let notesDown = true;
let trackerUrl = '';
before(async () => {
  await env.ready();
  tracker.app.put<{ Body: { reference?: string } }>('/notes', async (req, reply) =>
    notesDown ? reply.code(403).send({ error: 'notes are disabled' }) : { id: String(req.body?.reference) },
  );
  trackerUrl = await tracker.start();
  process.env.TICKET_TRACKER_URL = trackerUrl;
});
after(async () => {
  await tracker.close();
});

test('two processes replay the same runs at the same moment: each run is replayed once, one ticket each', async () => {
  const taskQueue = unique('replay-race');
  const service = unique('race');
  const cliEnv = {
    TEMPORAL_ADDRESS: env.server.address,
    WAKEGATE_APP: 'test/fixtures/ticket-app.ts',
    WAKEGATE_TASK_QUEUE: taskQueue,
    TICKET_TRACKER_URL: trackerUrl,
  };
  await withWorker(
    env.nativeConnection,
    taskQueue,
    async () => {
      const gate = ticketApp.gate(env.client, taskQueue);
      const titles: string[] = [];
      const runs: string[] = [];
      try {
        for (let i = 0; i < 4; i++) {
          const title = `${service} ${i} (${randomUUID().slice(0, 6)})`;
          titles.push(title);
          const event = { source: 'tickets', entity: service, type: 'incident.opened', occurredAt: `2026-12-06T09:00:0${i}Z`, payload: { service, title } };
          const answer = (await gate.admit(event, { agent: 'ticket-filer' })).wakes[0]!;
          await assert.rejects(env.client.workflow.getHandle(answer.runKey).result(), WorkflowFailedError);
          runs.push(answer.runKey);
        }
      } finally {
        await gate.close();
      }
      notesDown = false;

      const replay = () => runCli(['replay', 'ticket-filer', '--since', '1h', '--wake-key', service], cliEnv, 120_000);
      const [a, b] = await Promise.all([replay(), replay()]);
      for (const r of [a, b]) assert.equal(r.code, 0, r.stderr);
      const decisions = new Map<string, string[]>();
      for (const r of [a, b]) {
        for (const run of r.json.runs as { of: string; decision: string }[]) decisions.set(run.of, [...(decisions.get(run.of) ?? []), run.decision]);
        for (const n of (r.json.notReplayed ?? []) as { workflowId: string; why: string }[])
          decisions.set(n.workflowId, [...(decisions.get(n.workflowId) ?? []), n.why]);
      }
      for (const id of runs) {
        const said = decisions.get(id) ?? [];
        assert.equal(said.filter((d) => d === 'started').length, 1, `${id}: one process started its replay (${said.join(', ')})`);
        const latest0 = await env.client.workflow.getHandle(id).result();
        assert.equal((latest0 as { terminalReason: string }).terminalReason, 'success');
        // Visibility lists a closed execution a moment after it closes: wait for both, then none more.
        const count = async () => {
          let n = 0;
          for await (const _ of env.client.workflow.list({ query: `WorkflowId = ${JSON.stringify(id)}` })) n++;
          return n;
        };
        await eventually(count, (n) => n >= 2, 15_000, `${id}: its executions listed`);
        await new Promise((r) => setTimeout(r, 1000));
        assert.equal(await count(), 2, `${id}: the failed execution and one replay`);
      }
      for (const title of titles) assert.equal(tracker.tickets.filter((t) => t.title === title).length, 1, `one ticket for ${title}`);
    },
    { activities: ticketApp.activities() },
  );
});
