import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { NativeConnection } from '@temporalio/worker';
import { loadConfig } from '../config/config';
import { connectClient } from '../config/temporal';
import { Gate } from '../gate/gate';
import { defaultRegistry } from '../triggers/registry';
import { scheduleDefinitions } from '../schedules/definitions';
import { syncSchedules } from '../schedules/sync';
import { createLogger, installRuntimeLogger } from './logger';
import { createWakeWorker } from './worker';
import { startStandins } from '../standins';

const ROOT = path.resolve(__dirname, '..');
const devScript = (cmd: string) => spawnSync('bash', [path.join(ROOT, 'temporal-dev.sh'), cmd], { stdio: ['ignore', 'inherit', 'inherit'] });

/**
 * `npm start`: the main job on one machine. Brings up the embedded Temporal dev server (or reuses one
 * that is already up), runs a wake worker in the foreground, checks the whole path with a canary
 * ping, and prints where to look. Ctrl-C drains the worker and stops the dev server if it started it.
 */
async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config.logLevel, 'wakegate', config.logFormat);
  const wasUp = devScript('status').status === 0;
  if (devScript('up').status !== 0) throw new Error('could not bring up the Temporal dev server (see above)');
  installRuntimeLogger(logger);

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
  });

  const connection = await NativeConnection.connect(config.temporal.connectionOptions);
  const worker = await createWakeWorker({ connection, namespace: config.temporal.namespace, taskQueue: config.taskQueue });
  const running = worker.run();

  const client = await connectClient(config);
  // The schedules in code (schedules/definitions.ts), upserted like `wakegate schedules sync`: never unpauses.
  const synced = await syncSchedules({ client, taskQueue: config.taskQueue, definitions: scheduleDefinitions });
  const gate = new Gate({ client, taskQueue: config.taskQueue, registry: defaultRegistry() });
  const check = await gate.admit({
    source: 'ping',
    entity: 'npm-start',
    type: 'path-check',
    occurredAt: new Date().toISOString(),
    payload: {},
    deliveryId: `npm-start-${process.pid}`,
  });
  const outcome = check.result ?? (await client.workflow.getHandle(check.workflowId, check.runId).result());

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
      `  runs by reason: ${ui}/namespaces/${config.temporal.namespace}/workflows?query=${encodeURIComponent('WakeTerminalReason="success"')}`,
      '  try:',
      `    npx wakegate emit --source ping --entity demo --type check --payload '{"holdMs":5000}' --wait`,
      `    npx wakegate emit --source ping --entity demo --type check --payload '{"holdMs":5000}'   # again: completed, stored result`,
      `  stand-ins: channel ${standins.urls.channel}/messages, exports ${standins.urls.exports}/exports, PRs ${standins.urls.pulls}/pulls`,
      `    npx wakegate emit --source campaigns --entity spring-sale --type config.changed --payload '{"dashboards":["reach","spend"]}'`,
      `    npx wakegate emit --source campaigns --entity spring-sale --type report.due   # coalesced: the same run (wake key spring-sale)`,
      `    npx wakegate coalescer campaign-reporter spring-sale                          # its pending batch, live run, counts`,
      `    npx wakegate approve '<workflowId from emit>'   # the export waits for a person; see: npx wakegate runs --wake-key spring-sale`,
      `    npx wakegate emit --source deps --entity acme/web:react --type release.published --payload '{"repo":"acme/web","package":"react","from":"19.0.0","to":"19.1.0"}' --wait`,
      '  Ctrl-C stops the worker' + (wasUp ? ' (the dev server was already up and stays up).' : ' and the dev server.'),
      '',
    ].join('\n'),
  );

  try {
    await running; // the SDK shuts the worker down on SIGINT/SIGTERM
  } finally {
    await client.connection.close();
    await connection.close();
    await standins.close();
    if (!wasUp) devScript('down');
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
