import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { syncSchedules } from '../../schedules/sync';
import { loadConfig } from '../config/config';
import { createLogger, installRuntimeLogger } from '../runtime/logger';
import { DevServer } from '../testing/dev-server';
import { startIngress } from '../trigger/webhook/serve';
import { secretVariable } from '../trigger/webhook/source';
import { app } from './app';
import { UsageError } from './output';

export interface DevOptions {
  /** false (`--no-server`): use the Temporal at TEMPORAL_ADDRESS instead of starting the embedded dev server. */
  server: boolean;
  /** The Web UI's port of the embedded server. */
  uiPort: string;
}

/** The port of a `host:port` address. */
function portOf(address: string): number {
  const port = Number(/:(\d+)$/.exec(address)?.[1]);
  if (!Number.isInteger(port) || port <= 0) throw new UsageError(`TEMPORAL_ADDRESS "${address}" names no port (host:port)`);
  return port;
}

/**
 * `wakegate dev`: the deployment on one machine. Starts the embedded Temporal dev server (on the
 * configured address's port, its Web UI and a SQLite file under `.wakegate/`) unless `--no-server`,
 * runs a wake worker for the deployment, syncs its schedules, brings up its supervisor and serves its
 * webhook sources (with their dev secrets when their variables are unset). Prints one JSON line with
 * where everything is once it is all up; Ctrl-C drains the worker and stops what it started.
 */
export async function dev(opts: DevOptions): Promise<number> {
  const config = loadConfig();
  const wakegate = app();
  const logger = createLogger(config.logLevel, 'wakegate', config.logFormat);
  installRuntimeLogger(logger);
  const address = config.temporal.connectionOptions.address ?? 'localhost:7233';
  const uiPort = Number(opts.uiPort);
  if (!Number.isInteger(uiPort) || uiPort <= 0) throw new UsageError(`--ui-port must be a port number, got "${opts.uiPort}"`);
  const dataDir = path.join(process.cwd(), '.wakegate');
  if (opts.server) mkdirSync(dataDir, { recursive: true });
  const server = opts.server
    ? await DevServer.start({
        port: portOf(address),
        uiPort,
        dbFilename: path.join(dataDir, 'temporal.db'),
        namespace: config.temporal.namespace,
      }).catch((err: unknown) => {
        throw new Error(
          `could not start the dev server on ${address} (is a server already listening there? then run wakegate dev --no-server): ${(err as Error).message}`,
        );
      })
    : undefined;
  try {
    const worker = await wakegate.worker();
    const running = worker.run();
    // A failure past this point (Temporal unreachable, a listener's port taken) stops the worker too:
    // left polling, it would keep the command alive after it said why it failed.
    const stopWorker = () => {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      return running.catch(() => undefined);
    };
    const client = await wakegate.client().catch(async (err: unknown) => {
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
        config: config.ingress,
        startBacklog: config.startBacklog,
        allowDevSecrets: true,
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
    const ui = server ? `http://127.0.0.1:${uiPort}/namespaces/${config.temporal.namespace}` : undefined;
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
        `  supervisor page: ${ingress.operatorUrl}/supervisor`,
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
    await server?.stop();
  }
}
