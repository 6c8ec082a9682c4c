import { test } from 'node:test';
import assert from 'node:assert/strict';
import { agentOfId, runPerAgent, type RunOfEvent } from '../../src/cli/resolve-run';

/* Which run `wakegate kill <event key>` means for each agent the event woke (src/cli/resolve-run.ts). */

const run = (agent: string, workflowId: string, status: string, startTime?: string): RunOfEvent => ({
  agent,
  workflowId,
  status,
  ...(startTime ? { startTime } : {}),
});

test('the agent is the part of a run, admission record or batch ID before its first @ or #', () => {
  assert.equal(agentOfId('canary@ping/check/a@b/2026-12-02T13:00:00Z'), 'canary');
  assert.equal(agentOfId('campaign-reporter#spring%40sale@campaigns/config.changed/spring@sale/2026-12-02T09:00:00Z'), 'campaign-reporter');
  assert.equal(agentOfId('canary@schedule/tick/canary-heartbeat-2026-12-02T09:00:00Z'), 'canary');
});

test('one run per agent: the open one, else one not started yet, else the newest; sorted by agent', () => {
  const picked = runPerAgent([
    run('reporter', 'reporter#c@e1', 'COMPLETED', '2026-12-02T09:00:10Z'), // cancelled for a restart
    run('reporter', 'reporter#c@e2', 'RUNNING', '2026-12-02T09:00:05Z'), // its successor, holding the event now
    run('digest', 'digest#c@e1', 'COMPLETED', '2026-12-02T09:00:00Z'),
    run('digest', 'digest#c@e3', 'COMPLETED', '2026-12-02T09:01:00Z'),
    run('canary', 'canary@e1', 'PENDING'),
    run('canary', 'canary@old', 'TERMINATED', '2026-12-02T08:00:00Z'),
  ]);
  assert.deepEqual(
    picked.map((r) => [r.agent, r.workflowId]),
    [
      ['canary', 'canary@e1'],
      ['digest', 'digest#c@e3'],
      ['reporter', 'reporter#c@e2'],
    ],
  );
  assert.deepEqual(runPerAgent([]), []);
});
