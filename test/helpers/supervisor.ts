import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Client, WorkflowHandle } from '@temporalio/client';
import type { NativeConnection, Worker } from '@temporalio/worker';
import type { AgentRegistry } from '../../src/agents/registry';
import { Gate } from '../../src/gate/gate';
import { pagerDutyPager } from '../../src/supervisor/pager';
import { SupervisorLink } from '../../src/supervisor/link';
import { supervisorView } from '../../src/supervisor/view';
import { pagerService } from '../../tools/standins/pager';
import { createWakeWorker } from '../../src/runtime/worker';
import { supervisorId } from '../../src/core/ids';
import { supervisorStatusQuery } from '../../src/core/supervisor-messages';
import type { SupervisorPolicy, SupervisorStatus } from '../../src/core/supervisor-types';
import { eventually, workflowBundle } from './env';
import { registryOf, activitiesOf, exampleApp } from './app';

/** A policy for tests: quick observation and re-checks, no caps and thresholds out of reach unless the test sets them. */
export function testPolicy(change: Partial<SupervisorPolicy> = {}): SupervisorPolicy {
  return {
    ...exampleApp.supervisorPolicy,
    storm: { fleetPerMinute: 100_000, rationale: 'test: out of reach' },
    errorRate: { ...exampleApp.supervisorPolicy.errorRate, minRuns: 1_000_000 },
    caps: { fleet: [], agents: {} },
    observeEveryMs: 500,
    holdRecheckMs: 1000,
    ...change,
  };
}

/** The PagerDuty stand-in on a free port, as the fake the real adapter talks to. */
export async function startPager() {
  const pager = pagerService({ log: () => undefined });
  const url = await pager.app.listen({ host: '127.0.0.1', port: 0 });
  return {
    ...pager,
    url: `${url}/v2/enqueue`,
    adapter: pagerDutyPager({ url: `${url}/v2/enqueue`, routingKey: 'wakegate-test-routing-key', timeoutMs: 5000 }),
  };
}

/** A gate whose supervisor link reads and reports quickly (tests wait for the supervisor, not for caches). */
export function supervisedGate(client: Client, taskQueue: string, policy: SupervisorPolicy, agents?: AgentRegistry): Gate {
  const gate = new Gate({
    client,
    taskQueue,
    registry: registryOf(agents),
    decisionWaitMs: 5000,
    supervisor: new SupervisorLink({ client, taskQueue, policy, cacheMs: 100, flushMs: 50 }),
  });
  openGates.add(gate);
  return gate;
}

const openGates = new Set<Gate>();

/** Close every gate `supervisedGate` made (before the connection they use is closed). */
export async function closeGates(): Promise<void> {
  const gates = [...openGates];
  openGates.clear();
  await Promise.all(gates.map((g) => g.close()));
}

type DeploymentActivities = ReturnType<typeof activitiesOf>;

/**
 * A wake worker with this policy and pager (and any other activity deps); `replace` gives activities
 * to use in place of the deployment's own (a fault a test puts in one of them), from the real ones.
 */
export async function supervisedWorker(
  connection: NativeConnection,
  taskQueue: string,
  deps: Parameters<typeof activitiesOf>[0] & { supervisor: SupervisorPolicy },
  replace: (real: DeploymentActivities) => Partial<DeploymentActivities> = () => ({}),
): Promise<{ worker: Worker; running: Promise<void> }> {
  const real = activitiesOf(deps);
  const worker = await createWakeWorker({
    connection,
    namespace: 'default',
    taskQueue,
    activities: { ...real, ...replace(real) },
    workflowBundle: await workflowBundle(),
    shutdownGraceTime: '1 second',
  });
  return { worker, running: worker.run() };
}

/** The supervisor's status and held wakes, as `wakegate supervisor status` prints them. */
export const viewOf = (client: Client, taskQueue: string) => supervisorView(client, taskQueue);

export const supervisorHandle = (client: Client, taskQueue: string) => client.workflow.getHandle(supervisorId(taskQueue));

/** The supervisor's status query, or undefined while it is not up yet (a probe for `eventually`). */
export const supervisorStatus = (client: Client, taskQueue: string): Promise<SupervisorStatus | undefined> =>
  supervisorHandle(client, taskQueue)
    .query(supervisorStatusQuery)
    .catch(() => undefined);

/**
 * A PagerDuty-shaped endpoint that takes every request and never answers (each send attempt times
 * out), with the real adapter pointed at it and the requests that arrived.
 */
export async function startHangingPager(timeoutMs = 5000) {
  const arrived: string[] = [];
  const server = createServer((req) => {
    arrived.push(req.url ?? '');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const adapter = pagerDutyPager({
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v2/enqueue`,
    routingKey: 'wakegate-test-routing-key',
    timeoutMs,
  });
  return {
    arrived,
    adapter,
    async close(): Promise<void> {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/**
 * Poke a workflow (a signal that adds history events) until it has continued as new, on a dev
 * server that suggests continue-as-new early; returns its current run id.
 */
export async function pokeUntilContinued(
  handle: WorkflowHandle,
  firstRunId: string,
  poke: () => Promise<unknown>,
  pauseMs: number,
  what: string,
  timeoutMs = 60_000,
): Promise<string> {
  return eventually(
    async () => {
      await poke().catch(() => undefined);
      await new Promise((r) => setTimeout(r, pauseMs));
      return (await handle.describe()).runId;
    },
    (runId) => runId !== firstRunId,
    timeoutMs,
    what,
  );
}
