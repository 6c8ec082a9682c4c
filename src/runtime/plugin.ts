import { createHash, randomBytes } from 'node:crypto';
import { existsSync, lstatSync, mkdtempSync, readdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SimplePlugin } from '@temporalio/plugin';
import type { BundleOptions, WorkerOptions } from '@temporalio/worker';
import { activeTracing } from '../tracing/provider';

// This module is in the public entry: it loads no more than @temporalio/plugin (no worker, no client),
// so that importing 'wakegate' (every CLI call loads the deployment module) stays light.

/** wakegate's workflows: one bundle entry (workflows/index). */
const WAKEGATE_WORKFLOWS = require.resolve('../../workflows');
/** Entries this process composed: a composed entry is never composed again (the bundler asks after the worker did). */
const composed = new Set<string>();
/** The names of the folders composed entries are written in, under the OS's temporary folder. */
const FOLDER_PREFIX = 'wakegate-workflows-';
/** A folder of ours older than this was left by a process that did not exit (a crash, SIGKILL), ms: its worker bundled long ago. */
const STALE_FOLDER_MS = 24 * 3600 * 1000;
let folder: string | undefined;

/** The node_modules folder Temporal's workflow package sits in: where a composed entry's bundle finds it. */
function workflowPackageRoot(): string {
  const main = require.resolve('@temporalio/workflow');
  return main.slice(0, main.lastIndexOf(`${path.sep}node_modules${path.sep}`) + `${path.sep}node_modules`.length);
}

/** Remove the entry folders of ours that past processes left behind; another user's, or a symlink, are never touched. */
function removeStaleFolders(base: string): void {
  const uid = process.getuid?.();
  for (const name of readdirSync(base).filter((n) => n.startsWith(FOLDER_PREFIX))) {
    try {
      const st = lstatSync(path.join(base, name));
      if (st.isDirectory() && (uid === undefined || st.uid === uid) && Date.now() - st.mtimeMs > STALE_FOLDER_MS) {
        rmSync(path.join(base, name), { recursive: true, force: true });
      }
    } catch {
      // Gone meanwhile (another process cleaned it up), or not ours to read: left as it is.
    }
  }
}

/**
 * This process's folder for composed entries: made by mkdtemp under the OS's temporary folder (a
 * random name, mode 0700: nobody else can read, plant or swap a file in it), removed when the process
 * exits. The bundler resolves the entry's imports from its folder upward, and a folder above it may
 * hold another user's `node_modules`: a `node_modules` link inside points at the packages wakegate
 * itself loads, so Temporal's workflow package is always found there first.
 */
function entryFolder(): string {
  if (folder !== undefined && existsSync(folder)) return folder;
  const base = tmpdir();
  removeStaleFolders(base);
  const made = mkdtempSync(path.join(base, FOLDER_PREFIX));
  symlinkSync(workflowPackageRoot(), path.join(made, 'node_modules'), 'junction');
  if (folder === undefined) process.once('exit', () => folder !== undefined && rmSync(folder, { recursive: true, force: true }));
  folder = made;
  return made;
}

/**
 * One workflows entry for a worker that runs its own workflows and wakegate's: a module that
 * re-exports both, written in a folder of this process's own (see {@link entryFolder}). The names of
 * wakegate's workflow types (runWorkflow, coalescerWorkflow, supervisorWorkflow, rolloutWorkflow, subagentWorkflow,
 * and the schedule stage's) must not be among yours: two exports of one name are dropped, not merged.
 */
export function composeWorkflows(own: string | undefined): string {
  if (own === undefined || own === WAKEGATE_WORKFLOWS || composed.has(own)) return own ?? WAKEGATE_WORKFLOWS;
  const body = `export * from ${JSON.stringify(require.resolve(own))};\nexport * from ${JSON.stringify(WAKEGATE_WORKFLOWS)};\n`;
  const file = path.join(entryFolder(), `${createHash('sha256').update(body).digest('hex').slice(0, 16)}.js`);
  // Written aside under a name nobody can guess or have made first ('wx'), then renamed into place:
  // a bundler reading the entry never reads it half written.
  const aside = `${file}.${randomBytes(8).toString('hex')}.tmp`;
  writeFileSync(aside, body, { flag: 'wx', mode: 0o600 });
  renameSync(aside, file);
  composed.add(file);
  return file;
}

/**
 * A worker's workflow cache bound when its options give none (`maxCachedWorkflows`): its memory is
 * bounded by it, not by the number of wake keys. Temporal's own default grows with the heap, and
 * every wake key leaves a coalescer open, idle, until its dedup horizon (about 0.4 MB each cached, in
 * bench:coalesce). An evicted coalescer replays its short, continued-as-new history on its next task.
 */
export const DEFAULT_WORKFLOW_CACHE = 500;

/**
 * wakegate as a Temporal plugin, for the worker and the client you already run: the worker gets
 * wakegate's activities (for this deployment's agents) and workflows beside yours, and, with tracing
 * on, its interceptors and span sink; the client its tracing interceptors. Made by `app.plugin()`.
 * @example
 * const worker = await Worker.create({ connection, taskQueue: app.config.taskQueue, workflowsPath: require.resolve('./workflows'), activities: myActivities, plugins: [app.plugin()] });
 */
export class WakegatePlugin extends SimplePlugin {
  constructor(activities: () => object) {
    const tracing = activeTracing();
    super({
      name: 'wakegate',
      activities: (existing) => ({ ...existing, ...activities() }),
      workflowsPath: composeWorkflows,
      ...(tracing
        ? {
            clientInterceptors: tracing.clientInterceptors,
            workerInterceptors: { ...tracing.workerOptions().interceptors, workflowModules: [require.resolve('../../workflows/tracing')] },
          }
        : {}),
    });
  }

  override configureWorker(options: WorkerOptions): WorkerOptions {
    const configured: WorkerOptions = {
      ...super.configureWorker(options),
      // A run's steps heartbeat every second; sending each (not one per 0.8 x heartbeat timeout) is
      // what lets a kill reach a step within about a second, and a cancelled run waits for that.
      maxHeartbeatThrottleInterval: options.maxHeartbeatThrottleInterval ?? '1 second',
      maxCachedWorkflows: options.maxCachedWorkflows ?? DEFAULT_WORKFLOW_CACHE,
    };
    if (options.workflowBundle !== undefined) {
      // A worker given a built bundle bundles nothing: wakegate's workflows (and, with tracing on, its
      // interceptor modules) must be in that bundle, as in createWakeWorker's. No path, no modules to add.
      configured.workflowsPath = options.workflowsPath;
      configured.interceptors = { ...configured.interceptors, workflowModules: options.interceptors?.workflowModules };
    }
    const tracing = activeTracing();
    return tracing ? { ...configured, sinks: { ...configured.sinks, ...tracing.workerOptions().sinks } } : configured;
  }

  override configureBundler(options: BundleOptions): BundleOptions {
    const configured = super.configureBundler(options);
    const before = configured.webpackConfigHook;
    const root = workflowPackageRoot();
    return {
      ...configured,
      // A composed entry lives outside any package: its bundle finds Temporal's workflow package through
      // its folder's link; this is a fallback for what the entry's own imports look for past it.
      webpackConfigHook: (config) => {
        const c = before ? before(config) : config;
        c.resolve = { ...c.resolve, modules: [...(c.resolve?.modules ?? ['node_modules']), root] };
        return c;
      },
    };
  }
}
