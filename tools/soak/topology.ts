import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import type { Client } from '@temporalio/client';
import { Redis } from 'ioredis';
import { loadConfig } from '../../src/config/config';
import { connectClient } from '../../src/config/temporal';
import { freePort } from '../../src/testing/dev-server';
import { RedisServer } from '../devserver/redis-server';
import { startStandins, standinSettings, type Standins } from '../standins';
import { trackerService, type TrackerService } from '../../examples/incident-triage/tracker';
import { startDevEnv, type DevEnv } from '../../test/helpers/env';
import { SoakProcess } from './procs';

const ROOT = path.resolve(__dirname, '..', '..');

export interface Topology {
  dir: string;
  taskQueue: string;
  /** The harness's own client (replaced after a dev-server restart). */
  client(): Client;
  /** Undefined with an external Temporal (TEMPORAL_ADDRESS set). */
  dev?: DevEnv;
  redisServer: RedisServer;
  redis(): Redis;
  standins: Standins;
  tracker: TrackerService;
  ingresses: string[];
  procs: SoakProcess[];
  /** The settings every process and CLI call of the soak is started with. */
  env: Record<string, string>;
  restartTemporal?: () => Promise<void>;
  restartRedis(): Promise<void>;
  teardown(): Promise<void>;
}

/**
 * The production-shaped topology on this machine: Temporal (a dev server of its own on a SQLite file,
 * or the one TEMPORAL_ADDRESS and its envconfig name), Redis, the stand-ins, `workers` worker
 * processes, two ingress processes on their own ports and two queue consumers in one group.
 */
export async function startTopology(opts: { workers: number; external: boolean }): Promise<Topology> {
  const dir = mkdtempSync(path.join(tmpdir(), 'wakegate-soak-'));
  if (!existsSync(path.join(ROOT, 'lib', 'cli', 'main.js')))
    spawnSync(process.execPath, [path.join(ROOT, 'tools', 'scripts', 'build-cli.mjs')], { stdio: 'inherit', cwd: ROOT });
  const taskQueue = `soak-${Date.now().toString(36)}`;
  let dev: DevEnv | undefined;
  let external: Client | undefined;
  const temporalEnv: Record<string, string> = {};
  if (opts.external) {
    external = await connectClient(loadConfig());
  } else {
    dev = await startDevEnv({ dbFilename: path.join(dir, 'temporal.db') });
    Object.assign(temporalEnv, { TEMPORAL_ADDRESS: dev.server.address, TEMPORAL_NAMESPACE: dev.server.namespace });
  }
  const redisServer = await RedisServer.start({ dir: path.join(dir, 'redis') });
  let redis = new Redis(redisServer.url, { maxRetriesPerRequest: null });
  redis.on('error', () => undefined);
  const standins = await startStandins();
  const tracker = trackerService();
  const trackerUrl = await tracker.start();

  const env: Record<string, string> = {
    ...temporalEnv,
    ...standinSettings(standins.urls),
    WAKEGATE_APP: path.join(ROOT, 'tools', 'soak', 'app.ts'),
    WAKEGATE_TASK_QUEUE: taskQueue,
    SOAK_TRACKER_URL: trackerUrl,
    WAKEGATE_REDIS_URL: redisServer.url,
    WAKEGATE_QUEUE_CLAIM_IDLE_MS: '5000',
    WAKEGATE_QUEUE_MAX_ATTEMPTS: '50',
    WAKEGATE_INGRESS_RATE_PER_S: '1000',
    WAKEGATE_INGRESS_BURST: '1000',
    WAKEGATE_OPERATOR_PORT: '0',
    WAKEGATE_SDK_METRICS_ADDRESS: '',
  };
  const procs: SoakProcess[] = [];
  for (let i = 1; i <= opts.workers; i++) procs.push(new SoakProcess('worker', `worker-${i}`, 'workers/main.ts', env, 'worker polling', dir));
  const ingresses: string[] = [];
  for (let i = 1; i <= 2; i++) {
    const port = await freePort();
    ingresses.push(`http://127.0.0.1:${port}`);
    procs.push(new SoakProcess('ingress', `ingress-${i}`, 'tools/soak/ingress-process.ts', { ...env, SOAK_INGRESS_PORT: String(port) }, 'LISTENING', dir));
  }
  for (let i = 1; i <= 2; i++)
    procs.push(
      new SoakProcess('consumer', `consumer-${i}`, 'tools/soak/consumer-process.ts', { ...env, SOAK_CONSUMER: `soak-consumer-${i}` }, 'CONSUMING', dir),
    );
  const topology: Topology = {
    dir,
    taskQueue,
    client: () => dev?.client ?? external!,
    dev,
    redisServer,
    redis: () => redis,
    standins,
    tracker,
    ingresses,
    procs,
    env,
    restartTemporal: dev
      ? async () => {
          await dev.server.stop();
          await new Promise((r) => setTimeout(r, 3000));
          await dev.server.up();
          await dev.reconnect();
        }
      : undefined,
    async restartRedis() {
      await redisServer.stop();
      await new Promise((r) => setTimeout(r, 2000));
      await redisServer.up();
      const old = redis;
      redis = new Redis(redisServer.url, { maxRetriesPerRequest: null });
      redis.on('error', () => undefined);
      old.disconnect();
    },
    async teardown() {
      await Promise.all(procs.map((p) => p.stop()));
      redis.disconnect();
      await redisServer.stop();
      await standins.close();
      await tracker.close();
      if (dev) await dev.teardown();
      else await external!.connection.close();
    },
  };
  try {
    for (const p of procs) await p.start();
  } catch (err) {
    await topology.teardown().catch(() => undefined);
    throw err;
  }
  return topology;
}
