import { randomUUID } from 'node:crypto';
import { after, before } from 'node:test';
import { Client, Connection, WorkflowNotFoundError, defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';
import { setTimeout as sleep } from 'node:timers/promises';
import { bundleWorkflowCode, NativeConnection, Runtime, DefaultLogger, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { DevServer, type DevServerOptions } from '../../src/testing/dev-server';
import { startTimeSkipping } from '../../src/testing/time-skipping';
import { createWakeWorker } from '../../src/runtime/worker';
import { temporal } from '@temporalio/proto';
import { supervisorId } from '../../src/core/ids';
import { SupervisorLink } from '../../src/supervisor/link';
import { supervisorStatusQuery } from '../../src/core/supervisor-messages';
import { exampleApp } from './app';
import type { Activities } from '../../src/core/contracts';

let runtimeInstalled = false;
/** Keep the SDK quiet in tests (one Runtime per test process). */
export function quietRuntime(): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  try {
    // No shutdown signals: the test runner's SIGTERM to a file that timed out ends the process,
    // where the Runtime's default would only shut its workers down and leave the file hanging.
    Runtime.install({ logger: new DefaultLogger('WARN'), shutdownSignals: [] });
  } catch {
    // already installed
  }
}

let bundle: Promise<WorkflowBundleWithSourceMap> | undefined;
/** The workflow bundle, built once per test file. */
export function workflowBundle(): Promise<WorkflowBundleWithSourceMap> {
  bundle ??= bundleWorkflowCode({ workflowsPath: require.resolve('../../workflows'), logger: new DefaultLogger('WARN') });
  return bundle;
}

/** A name no other test uses: task queues, entities, schedule ids. */
export function unique(prefix: string): string {
  return `${prefix}-${randomUUID().slice(0, 8)}`;
}

export interface DevEnv {
  server: DevServer;
  client: Client;
  nativeConnection: NativeConnection;
  /** Reconnect both connections (after a server restart). */
  reconnect(): Promise<void>;
  /**
   * Resolves once the server is up and the clients connected. node:test runs a file's top-level
   * `before` hooks side by side, not in turn: a file's own hook that uses the env awaits this first.
   */
  ready(): Promise<void>;
  teardown(): Promise<void>;
}

/**
 * A client connection with grpc's usual retries, and a way to close it that nothing outlives.
 * The retry interceptor fires its backoff timer even after the channel is closed, and the call it
 * then starts throws uncaught ("Channel has been shut down"); a call that met a stopped server
 * keeps such a timer for up to ~20 s. `close` stops new retries, outwaits the pending ones, then closes.
 * Each connection has its own subchannel: grpc-js shares one per address by default, and one that met
 * a stopped server is in reconnect backoff (up to minutes), which a replacement must not inherit.
 */
async function settledConnection(address: string): Promise<{ connection: Connection; close(): Promise<void> }> {
  const base = defaultGrpcRetryOptions();
  let closing = false;
  let pendingUntil = 0;
  const connection = await Connection.connect({
    address,
    channelArgs: { 'grpc.use_local_subchannel_pool': 1 },
    interceptors: [
      makeGrpcRetryInterceptor({
        retryableDecider: (attempt, status) => !closing && base.retryableDecider(attempt, status),
        delayFunction: (attempt, status) => {
          const delay = base.delayFunction(attempt, status);
          pendingUntil = Math.max(pendingUntil, Date.now() + delay);
          return delay;
        },
      }),
    ],
  });
  return {
    connection,
    async close() {
      closing = true;
      const wait = pendingUntil - Date.now();
      if (wait > 0) await sleep(wait + 50);
      await connection.close().catch(() => undefined);
    },
  };
}

/** A real dev server of this test file's own, on a free port, with clients connected to it. */
export async function startDevEnv(opts: DevServerOptions = {}): Promise<DevEnv> {
  return startDevEnvInto({ ready: () => Promise.resolve() } as DevEnv, opts);
}

/**
 * The test file's dev server: started before its first test (a `before` hook of node:test, which
 * runs beside the file's own: a hook of the file that uses the env first awaits `env.ready()`),
 * stopped after its last, once the file's own `after` hooks have closed what they opened on it
 * (gates, ingresses, workers): node:test runs `after` hooks in turn, in the order they were
 * registered, so this one is registered once the file's top level has run. The object is filled in
 * when the server is up; read its fields inside tests and hooks, never at the file's top level.
 */
export function useDevEnv(opts: DevServerOptions = {}): DevEnv {
  let starting: Promise<void> | undefined;
  const env = { ready: () => (starting ??= startDevEnvInto(env, opts).then(() => undefined)) } as DevEnv;
  before(() => env.ready());
  queueMicrotask(() =>
    after(async () => {
      await env.teardown?.();
    }),
  );
  return env;
}

async function startDevEnvInto(env: DevEnv, opts: DevServerOptions): Promise<DevEnv> {
  quietRuntime();
  const server = await DevServer.start(opts);
  // A client replaced by `reconnect` is closed at teardown, not at once: objects the test made on it
  // (an ingress, a gate) may still be retrying a call.
  const closers: (() => Promise<void>)[] = [];
  Object.assign(env, {
    ready: env.ready,
    server,
    client: undefined as unknown as Client,
    nativeConnection: undefined as unknown as NativeConnection,
    async reconnect() {
      await env.nativeConnection?.close().catch(() => undefined);
      const { connection, close } = await settledConnection(server.address);
      closers.push(close);
      env.client = new Client({ connection, namespace: server.namespace });
      env.nativeConnection = await NativeConnection.connect({ address: server.address });
    },
    async teardown() {
      await Promise.all(closers.map((close) => close()));
      await env.nativeConnection?.close().catch(() => undefined);
      await server.stop();
    },
  } satisfies DevEnv);
  await env.reconnect();
  return env;
}

/** The Java SDK's time-skipping test server, from the installed binary (never downloaded), with wakegate's search attributes. */
export async function startTimeSkippingEnv(): Promise<TestWorkflowEnvironment> {
  quietRuntime();
  return startTimeSkipping();
}

/**
 * Fail, rather than hang, when a test left the time-skipping server's clock held. The server holds
 * its clock still while any workflow task is outstanding, so a task for a test's queue that comes
 * after its worker stopped (a timer of that test firing later, a late signal) is taken by no one,
 * and every later sleep in the file runs in real time (a 10 min sleep takes 10 min). Call it after
 * each test: it skips an hour (firing whatever that test left behind) and must be back at once.
 */
export async function assertClockFree(env: TestWorkflowEnvironment, skipMs = 3_600_000, withinMs = 15_000): Promise<void> {
  const timeout = new AbortController();
  const held = sleep(withinMs, 'held' as const, { signal: timeout.signal }).catch(() => 'free' as const);
  const outcome = await Promise.race([env.sleep(skipMs).then(() => 'free' as const), held]);
  timeout.abort();
  if (outcome === 'held') {
    const open = await env.connection.workflowService.listOpenWorkflowExecutions({ namespace: env.namespace ?? 'default', maximumPageSize: 100 });
    const names = await Promise.all(
      (open.executions ?? []).map(async (e) => {
        const history = await env.client.workflow
          .getHandle(e.execution!.workflowId!, e.execution!.runId!)
          .fetchHistory()
          .catch(() => undefined);
        const last = history?.events?.slice(-4).map((ev) => temporal.api.enums.v1.EventType[ev.eventType!]?.replace(/^EVENT_TYPE_/, ''));
        return `${e.type?.name} ${e.execution?.workflowId} (last events: ${last?.join(' ') ?? '?'})`;
      }),
    );
    throw new Error(
      `the time-skipping server did not skip ${skipMs} ms within ${withinMs} ms of real time: a workflow task or activity of a finished test is outstanding with no worker to take it (close what the test started before its worker stops); open workflows: ${names.join(', ') || 'none'}`,
    );
  }
}

/**
 * On the time-skipping server (no visibility API), wait until `taskQueue`'s supervisor, if one was
 * started, has made its first round (a visibility read that fails for good) and waits on signals
 * only: from then on it schedules no work of its own, so none is left when the worker stops.
 */
export async function supervisorIdle(client: Client, taskQueue: string): Promise<void> {
  const handle = client.workflow.getHandle(supervisorId(taskQueue));
  await eventually(
    () => handle.query(supervisorStatusQuery).catch((err: unknown) => (err instanceof WorkflowNotFoundError ? 'none' : Promise.reject(err))),
    (s) => s === 'none' || s.visibilityError?.unavailable === true,
    15_000,
    `the supervisor of ${taskQueue} to be idle`,
  );
}

/** Run `fn` while a wake worker polls `taskQueue`. */
export async function withWorker<T>(
  connection: NativeConnection,
  taskQueue: string,
  fn: () => Promise<T>,
  opts: { activities?: object; namespace?: string } = {},
): Promise<T> {
  const worker = await createWakeWorker({
    connection,
    namespace: opts.namespace ?? 'default',
    taskQueue,
    activities: (opts.activities as Activities | undefined) ?? exampleApp.activities(),
    workflowBundle: await workflowBundle(),
    shutdownGraceTime: '1 second',
  });
  return worker.runUntil(fn);
}

/**
 * `withWorker` on the time-skipping server, with the task queue's supervisor brought up and let
 * finish its first round (a visibility read this server cannot answer) before `fn`, and again
 * after it, before the worker stops: its start-up never overlaps the test's own waits (an
 * open-ended wait on env.client lets the server skip to the next timer of all, the supervisor's
 * 10-year run timeout among them), and no work of the test is left for a worker that is gone (see
 * `assertClockFree`).
 */
export async function withTimeSkippingWorker<T>(
  env: TestWorkflowEnvironment,
  taskQueue: string,
  fn: () => Promise<T>,
  opts: { activities?: object } = {},
): Promise<T> {
  return withWorker(
    env.nativeConnection,
    taskQueue,
    async () => {
      await new SupervisorLink({ client: env.client, taskQueue, policy: exampleApp.supervisorPolicy }).ensure(false);
      await supervisorIdle(env.client, taskQueue);
      const result = await fn();
      await supervisorIdle(env.client, taskQueue);
      return result;
    },
    opts,
  );
}

/** Poll `probe` until it returns a value that passes `done`, or fail after `timeoutMs`. */
export async function eventually<T>(probe: () => Promise<T>, done: (v: T) => boolean, timeoutMs = 15_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  for (;;) {
    last = await probe();
    if (done(last)) return last;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last value: ${JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
