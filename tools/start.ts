import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { NativeConnection } from '@temporalio/worker';
import { loadConfig, type Config } from '../src/config/config';
import { connectClient } from '../src/config/temporal';
import { embeddedServerPort } from '../src/cli/dev-target';
import { loadApp } from '../src/runtime/load-app';
import { syncSchedules } from '../schedules/sync';
import { createLogger, installRuntimeLogger } from '../src/runtime/logger';
import { startIngressPart } from '../src/processes/ingress';
import { startQueue } from '../src/processes/queue';
import { untilStopped } from '../src/processes/running';
import { startWorker } from '../src/processes/worker';
import { startStandins } from './standins';
import { REDIS_USER, RedisServer } from './devserver/redis-server';
import { IngressMetrics } from '../src/trigger/webhook/metrics';
import { QueueMetrics } from '../src/trigger/queue/metrics';
import { streamKey } from '../src/trigger/queue/redis-streams';
import { secretVariable } from '../src/trigger/webhook/source';
import { ensureTracing } from '../src/tracing/provider';

/** Where `npm start` runs its own redis-server when WAKEGATE_REDIS_URL is unset (data kept under .wakegate/redis). */
const DEV_REDIS_PORT = 6390;

const ROOT = path.resolve(__dirname, '..');

/** A Redis URL fit for a log: its user and password dropped. */
const withoutCredentials = (url: string) => {
  const u = new URL(url);
  u.username = '';
  u.password = '';
  return u.toString();
};
/** The printed redis-cli example for the embedded Redis: its password from where it is, never shown. */
const redisCli = (fromEnv: boolean) =>
  `REDISCLI_AUTH="${fromEnv ? '$WAKEGATE_REDIS_PASSWORD' : '$(cat .wakegate/redis/password)'}" redis-cli -p ${DEV_REDIS_PORT} --user ${REDIS_USER}`;
/** temporal-dev.sh on the configured loopback port and namespace (through env(1): the rest of the environment as it is). */
const devScript = (cmd: string, port: number, namespace: string) =>
  spawnSync('env', [`WAKEGATE_DEV_PORT=${port}`, `WAKEGATE_DEV_NAMESPACE=${namespace}`, 'bash', path.join(ROOT, 'temporal-dev.sh'), cmd], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });

/**
 * `npm start`: the main job on one machine. Brings up the embedded Temporal dev server (or reuses one
 * that is already up), runs a wake worker in the foreground, checks the whole path with a canary
 * ping, and prints where to look. Ctrl-C drains the worker and stops the dev server if it started it.
 */
async function main(): Promise<void> {
  const loaded = loadConfig();
  // Like `wakegate dev`: the dev server on the configured loopback port, and every connection to it
  // alone; a configured Temporal elsewhere (another host, TLS, an API key) is refused before anything starts.
  const port = embeddedServerPort(loaded.temporal);
  const namespace = loaded.temporal.namespace;
  const config: Config = { ...loaded, temporal: { namespace, connectionOptions: { address: `127.0.0.1:${port}` } } };
  const wakegate = loadApp(config.app);
  const logger = createLogger(config.logLevel, 'wakegate', config.logFormat);
  const wasUp = devScript('status', port, namespace).status === 0;
  if (devScript('up', port, namespace).status !== 0) throw new Error('could not bring up the Temporal dev server (see above)');
  installRuntimeLogger(logger, { sdkMetricsAddress: config.ingress.sdkMetricsAddress || undefined });
  // One trace per wake, when the OTEL_* variables ask for it: the worker, the gate's client, the ingress and the queue.
  const tracing = ensureTracing(config.tracing);

  // The local stand-ins for the outside world, on the ports the configured URLs name (when they point here).
  const portOf = (url: string) => {
    const m = /^http:\/\/(127\.0\.0\.1|localhost):(\d+)/.exec(url);
    return m ? Number(m[2]) : undefined;
  };
  const o = config.outside;
  const standins = await startStandins({
    channel: o.channel.adapter === 'local' ? portOf(o.channel.url) : undefined,
    exports: portOf(o.exportUrl),
    pulls: o.pulls.adapter === 'local' ? portOf(o.pulls.url) : undefined,
    dashboards: portOf(o.dashboardUrl),
    pager: portOf(o.pager.url),
  });

  // The processes of `wakegate worker`, `wakegate ingress` and `wakegate queue`, started the same way, in one process.
  const connection = await NativeConnection.connect(config.temporal.connectionOptions);
  const worker = await startWorker({ app: wakegate, config, connection, logger });

  const client = await connectClient(config, tracing ? { interceptors: tracing.clientInterceptors } : {});
  // The deployment's schedules, upserted like `wakegate schedules sync`: never unpauses.
  const registry = wakegate.registry;
  const synced = await syncSchedules({ client, taskQueue: config.taskQueue, definitions: wakegate.schedules, registry });
  // The supervisor of this task queue, up before the first wake, with the deployment's policy.
  const supervisor = wakegate.supervisorLink(client, config.taskQueue);
  await supervisor.ensure(true);
  const gate = wakegate.gate(client, config.taskQueue, { supervisor });

  // The trigger stage: the webhook ingress and the queue trigger, both entering the same gate.
  const metrics = new IngressMetrics({ defaultMetrics: true });
  const ingress = await startIngressPart({ app: wakegate, config, client, logger, metrics, allowDevSecrets: true });
  const ownRedis = config.ingress.redisUrl
    ? undefined
    : await RedisServer.start({ port: DEV_REDIS_PORT, dir: path.join(ROOT, '.wakegate', 'redis'), password: config.ingress.redisPassword });
  const redisUrl = config.ingress.redisUrl ?? ownRedis!.url;
  const redisShown = withoutCredentials(redisUrl);
  const queueSources = registry.sources().filter((s) => s !== 'schedule');
  const queue = startQueue({ app: wakegate, config, client, redisUrl, logger, gate, metrics: new QueueMetrics(metrics.registry) });
  // On Ctrl-C (or SIGTERM) the trigger stage stops first (no new admissions; unacknowledged messages
  // stay in Redis), then the worker drains.
  const stopped = untilStopped([ingress, queue, worker], logger);
  const check = await gate.admit({
    source: 'ping',
    entity: 'npm-start',
    type: 'path-check',
    occurredAt: new Date().toISOString(),
    payload: {},
    deliveryId: `npm-start-${process.pid}`,
  });
  const outcome = check.result ?? (await client.workflow.getHandle(check.runKey, check.runId).result());

  const ui = 'http://localhost:8233';
  process.stderr.write(
    [
      '',
      `wakegate is running: worker on task queue "${config.taskQueue}", namespace "${config.temporal.namespace}".`,
      `  path check: ping ${check.decision} -> ${(outcome as { terminalReason: string }).terminalReason} (${check.eventKey})`,
      `  Web UI:     ${ui}/namespaces/${config.temporal.namespace}/workflows`,
      `  schedules:  created ${synced.created.length}, updated ${synced.updated.length}, unchanged ${synced.unchanged.length}` +
        (synced.paused.length ? `, paused by hand: ${synced.paused.map((p) => p.id).join(', ')}` : '') +
        ` (${ui}/namespaces/${config.temporal.namespace}/schedules; npx wakegate schedules list)`,
      `  supervisor: ${supervisor.workflowId} (npx wakegate supervisor status; npx wakegate halt|drain --who --reason), page ${ingress.operatorUrl}/supervisor (operator listener, never on the webhook port; ${Object.keys(config.ingress.operatorAuth.operators).length ? `sign-in for ${Object.keys(config.ingress.operatorAuth.operators).join(', ')}` : 'no sign-in configured, so loopback only: set WAKEGATE_OPERATORS=name:secret to require one'})`,
      `  runs by reason: ${ui}/namespaces/${config.temporal.namespace}/workflows?query=${encodeURIComponent('WakeTerminalReason="success"')}`,
      '  try:',
      `    npx wakegate emit --source ping --entity demo --type check --payload '{"holdMs":5000}' --wait`,
      `    npx wakegate emit --source ping --entity demo --type check --payload '{"holdMs":5000}'   # again: completed, stored result`,
      `  pager:      ${o.pager.url}${portOf(o.pager.url) ? ` (local stand-in: pages print here; incidents ${standins.urls.pager}/incidents)` : ''}; set WAKEGATE_PAGER_URL and WAKEGATE_PAGER_ROUTING_KEY for PagerDuty`,
      `  stand-ins: channel ${standins.urls.channel}/messages, exports ${standins.urls.exports}/exports, PRs ${standins.urls.pulls}/pulls`,
      `  agents (${config.app}):`,
      ...Object.values(wakegate.agents).map(
        (a) =>
          `    ${a.policy.name}: woken by ${a.policy.triggers.join(', ')}${a.policy.coalesce ? ` (coalesced per wake key, ${a.policy.coalesce.whileRunning} while running)` : ''}`,
      ),
      `    npx wakegate emit --source <trigger> --entity <id> --type <type> --payload '{...}' --wait   # wakes every agent of that trigger`,
      `    npx wakegate runs; npx wakegate approve '<workflowId>'   # an irreversible effect waits for a person`,
      `  ingress:    ${ingress.url}/webhooks/<source> (${wakegate.webhookSources.map((s) => s.name).join(', ')}), health ${ingress.url}/healthz; operator: metrics ${ingress.operatorUrl}/metrics, status ${ingress.operatorUrl}/status` +
        (config.ingress.sdkMetricsAddress ? `, Temporal SDK metrics http://${config.ingress.sdkMetricsAddress}/metrics` : ''),
      ...(ingress.devSecretSources.length
        ? [
            `    dev secrets in use for ${ingress.devSecretSources.join(', ')}: ${ingress.devSecretSources.map(secretVariable).join(', ')} unset, so the ` +
              'documented dev secret (docs/OPERATIONS.md, "Webhooks") verifies them. Never expose this ingress with dev secrets.',
          ]
        : []),
      `  tracing:    ${tracing ? `${tracing.config.exporters.map((e) => (e === 'otlp' ? `OTLP to ${new URL(tracing.config.otlp.url).origin}${new URL(tracing.config.otlp.url).pathname}` : 'JSON lines on stderr')).join(', ')}, service ${tracing.config.serviceName}` : 'off (set OTEL_EXPORTER_OTLP_ENDPOINT to send one trace per wake; docs/OPERATIONS.md)'}`,
      `  queue:      Redis ${redisShown}${ownRedis ? ` (started here, user ${REDIS_USER})` : ''}: XADD ${queueSources.map(streamKey).join(', ')} (dead letters: wakegate:dead:<source>)`,
      `    ${ownRedis ? redisCli(config.ingress.redisPassword !== undefined) : 'redis-cli -u "$WAKEGATE_REDIS_URL"'} XADD ${streamKey('ping')} '*' event '{"entity":"demo","type":"queued","occurredAt":"${new Date().toISOString()}"}'`,
      '  Ctrl-C stops the worker' + (wasUp ? ' (the dev server was already up and stays up).' : ' and the dev server.'),
      '',
    ].join('\n'),
  );

  try {
    process.exitCode = await stopped;
  } finally {
    await gate.close();
    await ownRedis?.stop();
    await client.connection.close();
    await connection.close();
    await standins.close();
    await tracing?.shutdown();
    if (!wasUp) devScript('down', port, namespace);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
