import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { syncSchedules } from '../../schedules/sync';
import { loadConfig } from '../config/config';
import { connectClient } from '../config/temporal';
import { createLogger, installRuntimeLogger } from '../runtime/logger';
import { DevServer } from '../testing/dev-server';
import { ensureTracing } from '../tracing/provider';
import { startIngress } from '../trigger/webhook/serve';
import { secretVariable } from '../trigger/webhook/source';
import { app } from './app';
import { DEFAULT_TEMPORAL_ADDRESS, devPorts, type DevPortOptions } from './dev-target';

export interface DevOptions extends DevPortOptions {
  /**
   * false (`--no-server`): use the configured Temporal (TEMPORAL_ADDRESS, TEMPORAL_PROFILE and the
   * rest) instead of starting the embedded dev server, and no dev secrets.
   */
  server: boolean;
}

/**
 * `wakegate dev`: the deployment on one machine. Starts the embedded Temporal dev server (on the
 * configured loopback address's port, its Web UI and a SQLite file under `.wakegate/`) and connects
 * the worker, the schedule sync, the supervisor and the ingress to it alone; a configured Temporal on
 * another host (or with TLS or an API key) is refused before anything starts (`--no-server` runs
 * against it on purpose). Serves the deployment's webhook sources, with their dev secrets when their
 * variables are unset, the embedded server is in use and the ingress listens on loopback. Prints one
 * JSON line with where everything is once it is all up; Ctrl-C drains the worker and stops what it started.
 */
export async function dev(opts: DevOptions): Promise<number> {
  const config = loadConfig();
  // Refused before the deployment is loaded or anything is started.
  const { serverPort, uiPort, ingressPort, operatorPort, sdkMetricsAddress } = devPorts(opts, config);
  const wakegate = app();
  const logger = createLogger(config.logLevel, 'wakegate', config.logFormat);
  installRuntimeLogger(logger, { sdkMetricsAddress });
  const dataDir = path.join(process.cwd(), '.wakegate');
  if (serverPort !== undefined) mkdirSync(dataDir, { recursive: true });
  const server =
    serverPort !== undefined
      ? await DevServer.start({
          port: serverPort,
          uiPort,
          dbFilename: path.join(dataDir, 'temporal.db'),
          namespace: config.temporal.namespace,
        }).catch((err: unknown) => {
          throw new Error(
            `could not start the dev server on port ${serverPort} (is a server already listening there? then run wakegate dev --no-server): ${(err as Error).message}`,
          );
        })
      : undefined;
  const address = server?.address ?? config.temporal.connectionOptions.address ?? DEFAULT_TEMPORAL_ADDRESS;
  // With the embedded server, every connection goes to it by its own address: nothing configured for
  // another Temporal (a profile's TLS or API key) comes along.
  let connection: NativeConnection | undefined;
  const connectEmbedded = (s: DevServer): Promise<Client> => {
    const tracing = ensureTracing(config.tracing);
    const embedded = { ...config, temporal: { namespace: s.namespace, connectionOptions: { address: s.address } } };
    return connectClient(embedded, tracing ? { interceptors: tracing.clientInterceptors } : {});
  };
  try {
    connection = server ? await NativeConnection.connect({ address: server.address }) : undefined;
    const worker = await wakegate.worker(server && connection ? { connection, namespace: server.namespace } : {});
    const running = worker.run();
    // A failure past this point (Temporal unreachable, a listener's port taken) stops the worker too:
    // left polling, it would keep the command alive after it said why it failed.
    const stopWorker = () => {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      return running.catch(() => undefined);
    };
    const client = await (server ? connectEmbedded(server) : wakegate.client()).catch(async (err: unknown) => {
      await stopWorker();
      throw err;
    });
    const taskQueue = config.taskQueue;
    const started = async () => {
      const synced = await syncSchedules({ client, taskQueue, definitions: wakegate.schedules, registry: wakegate.registry });
      await wakegate.supervisorLink(client, taskQueue).ensure(true);
      const ingress = await startIngress({
        client,
        taskQueue,
        registry: wakegate.registry,
        sources: wakegate.webhookSources,
        config: { ...config.ingress, port: ingressPort, operatorPort },
        startBacklog: config.startBacklog,
        // The dev secrets are published: never with a Temporal of someone else's (startIngress also
        // refuses them on a listener that is not loopback).
        allowDevSecrets: server !== undefined,
        logger,
      });
      return { synced, ingress };
    };
    const { synced, ingress } = await started().catch(async (err: unknown) => {
      await stopWorker();
      await client.connection.close();
      throw err;
    });
    let closing: Promise<void> | undefined;
    const closeIngress = () => (closing ??= ingress.close());
    process.once('SIGINT', () => void closeIngress());
    process.once('SIGTERM', () => void closeIngress());
    const ui = server ? `${server.uiUrl}/namespaces/${server.namespace}` : undefined;
    process.stdout.write(
      JSON.stringify({
        temporal: address,
        webUi: ui,
        taskQueue,
        agents: Object.keys(wakegate.agents),
        webhooks: wakegate.webhookSources.map((s) => `${ingress.url}/webhooks/${s.name}`),
        operator: ingress.operatorUrl,
        schedules: { created: synced.created.length, updated: synced.updated.length, unchanged: synced.unchanged.length },
      }) + '\n',
    );
    process.stderr.write(
      [
        `wakegate dev: worker on task queue "${taskQueue}" at ${address}${ui ? `; Web UI ${ui}/workflows` : ''}`,
        `  webhooks: ${wakegate.webhookSources.map((s) => `POST ${ingress.url}/webhooks/${s.name}`).join(', ') || 'none defined'}`,
        ...(ingress.devSecretSources.length
          ? [
              `  dev secrets for ${ingress.devSecretSources.join(', ')} (${ingress.devSecretSources.map(secretVariable).join(', ')} unset): never expose this listener`,
            ]
          : []),
        `  supervisor page: ${ingress.operatorUrl}/supervisor${sdkMetricsAddress ? `; Temporal SDK metrics http://${sdkMetricsAddress}/metrics` : ''}`,
        `  try: npx wakegate emit --source <trigger> --entity <id> --type <type> --payload '{...}' --wait`,
        '  Ctrl-C stops it.',
        '',
      ].join('\n'),
    );
    try {
      await running; // the SDK drains the worker on SIGINT / SIGTERM
    } finally {
      await closeIngress();
      await client.connection.close();
    }
    return 0;
  } finally {
    await connection?.close();
    await server?.stop();
  }
}
