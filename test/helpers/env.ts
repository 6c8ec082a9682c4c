import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, NativeConnection, Runtime, DefaultLogger, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DevServer, type DevServerOptions } from '../../devserver/dev-server';
import { temporalTestServerPath } from '../../devserver/binaries';
import { createWakeWorker } from '../../workers/worker';
import { temporal } from '@temporalio/proto';
import { ALL_SEARCH_ATTRIBUTES } from '../../workflows/search-attributes';

let runtimeInstalled = false;
/** Keep the SDK quiet in tests (one Runtime per test process). */
export function quietRuntime(): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  try {
    Runtime.install({ logger: new DefaultLogger('WARN') });
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
  teardown(): Promise<void>;
}

/** A real dev server of this test file's own, on a free port, with clients connected to it. */
export async function startDevEnv(opts: DevServerOptions = {}): Promise<DevEnv> {
  quietRuntime();
  const server = await DevServer.start(opts);
  const env: DevEnv = {
    server,
    client: undefined as unknown as Client,
    nativeConnection: undefined as unknown as NativeConnection,
    async reconnect() {
      await env.client?.connection.close().catch(() => undefined);
      await env.nativeConnection?.close().catch(() => undefined);
      env.client = new Client({ connection: await Connection.connect({ address: server.address }), namespace: server.namespace });
      env.nativeConnection = await NativeConnection.connect({ address: server.address });
    },
    async teardown() {
      await env.client?.connection.close().catch(() => undefined);
      await env.nativeConnection?.close().catch(() => undefined);
      await server.stop();
    },
  };
  await env.reconnect();
  return env;
}

/** The Java SDK's time-skipping test server, from the installed binary (never downloaded). */
export async function startTimeSkippingEnv(): Promise<TestWorkflowEnvironment> {
  quietRuntime();
  const env = await TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: { type: 'existing-path', path: temporalTestServerPath() } },
  });
  // The test server has no --search-attribute flag; register wakegate's through its operator service.
  const searchAttributes: Record<string, temporal.api.enums.v1.IndexedValueType> = {};
  for (const key of ALL_SEARCH_ATTRIBUTES) searchAttributes[key.name] = INDEXED[key.type]!;
  await env.connection.operatorService.addSearchAttributes({ namespace: env.namespace ?? 'default', searchAttributes });
  return env;
}

const INDEXED: Record<string, temporal.api.enums.v1.IndexedValueType> = {
  KEYWORD: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  KEYWORD_LIST: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST,
  INT: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_INT,
  DOUBLE: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_DOUBLE,
  DATETIME: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_DATETIME,
  TEXT: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_TEXT,
  BOOL: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_BOOL,
};

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
    activities: opts.activities,
    workflowBundle: await workflowBundle(),
    shutdownGraceTime: '1 second',
  });
  return worker.runUntil(fn);
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
