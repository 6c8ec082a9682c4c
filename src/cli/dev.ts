import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import type { Logger } from 'pino';
import { syncSchedules } from '../../schedules/sync';
import { loadConfig, type Config } from '../config/config';
import { connectClient } from '../config/temporal';
import { startIngressPart } from '../processes/ingress';
import { startQueue } from '../processes/queue';
import { untilStopped, type RunningPart } from '../processes/running';
import { startWorker } from '../processes/worker';
import { createLogger, installRuntimeLogger } from '../runtime/logger';
import type { Wakegate } from '../runtime/wakegate';
import { DevServer } from '../testing/dev-server';
import { ensureTracing } from '../tracing/provider';
import { streamKey } from '../trigger/queue/redis-streams';
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
 * the worker, the schedule sync, the supervisor, the ingress (and the queue consumer, when
 * WAKEGATE_REDIS_URL names a Redis) to it alone, each started as its own command starts it; a configured Temporal on
 * another host (or with TLS or an API key) is refused before anything starts (`--no-server` runs
 * against it on purpose). Serves the deployment's webhook sources, with their dev secrets when their
 * variables are unset, the embedded server is in use and the ingress listens on loopback. Prints one
 * JSON line with where everything is once it is all up; Ctrl-C (or SIGTERM) drains the triggers, then the worker, and stops what it started.
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
  const target: Config = server ? { ...config, temporal: { namespace: server.namespace, connectionOptions: { address: server.address } } } : config;
  const tracing = ensureTracing(config.tracing);
  let connection: NativeConnection | undefined;
  let client: Client | undefined;
  try {
    connection = await NativeConnection.connect(target.temporal.connectionOptions);
    client = await connectClient(target, tracing ? { interceptors: tracing.clientInterceptors } : {});
    const ports: Config = { ...target, ingress: { ...target.ingress, port: ingressPort, operatorPort } };
    const { parts, synced, ingress } = await startParts(wakegate, ports, client, connection, logger, server !== undefined);
    const taskQueue = config.taskQueue;
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
        ...(parts.some((p) => p.name === 'queue')
          ? {
              queue: wakegate.registry
                .sources()
                .filter((s) => s !== 'schedule')
                .map(streamKey),
            }
          : {}),
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
    return await untilStopped(parts, logger);
  } finally {
    await client?.connection.close();
    await connection?.close();
    await server?.stop();
  }
}

/**
 * The processes `dev` runs in one: the worker, then (schedules synced, the supervisor up with the
 * deployment's policy) the ingress, and the queue consumer when WAKEGATE_REDIS_URL names a Redis.
 * Ordered for the drain: the triggers stop before the worker. A failure past the worker's start
 * stops what started: left polling, it would keep the command alive after it said why it failed.
 */
async function startParts(wakegate: Wakegate, config: Config, client: Client, connection: NativeConnection, logger: Logger, embedded: boolean) {
  const worker = await startWorker({ app: wakegate, config, connection, logger });
  const parts: RunningPart[] = [worker];
  try {
    const taskQueue = config.taskQueue;
    const synced = await syncSchedules({ client, taskQueue, definitions: wakegate.schedules, registry: wakegate.registry });
    await wakegate.supervisorLink(client, taskQueue).ensure(true);
    // The dev secrets are published: never with a Temporal of someone else's (startIngress also
    // refuses them on a listener that is not loopback).
    const ingress = await startIngressPart({ app: wakegate, config, client, logger, allowDevSecrets: embedded });
    parts.unshift(ingress);
    if (config.ingress.redisUrl) parts.splice(1, 0, startQueue({ app: wakegate, config, client, redisUrl: config.ingress.redisUrl, logger }));
    return { parts, synced, ingress };
  } catch (err) {
    for (const part of parts) await part.stop();
    throw err;
  }
}
