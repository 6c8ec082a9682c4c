import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';

const ROOT = path.resolve(__dirname, '../..');

export interface WorkerProcess {
  child: ChildProcess;
  /** Resolves once the worker logs that it polls. */
  ready: Promise<void>;
  exited: Promise<number | null>;
  output(): string;
  /** SIGKILL and wait for the exit. */
  kill(): Promise<void>;
}

/** A real wake worker process (`node --import tsx workers/main.ts`), to SIGKILL or SIGSTOP in crash tests. */
export function spawnWorker(env: Record<string, string>): WorkerProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'workers', 'main.ts')], {
    cwd: ROOT,
    env: { ...process.env, WAKEGATE_LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const ready = new Promise<void>((resolve, reject) => {
    const onData = (b: Buffer) => {
      out += b.toString();
      if (out.includes('worker polling')) resolve();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', (code) => reject(new Error(`worker exited (${code}) before polling:\n${out}`)));
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    ready,
    exited,
    output: () => out,
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}

/** Activity attempts of one activity type, from the run's real history. */
export async function activityEvents(handle: WorkflowHandle, activityType: string) {
  const history = await handle.fetchHistory();
  const events = history.events ?? [];
  const scheduledIds = new Set(events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === activityType).map((e) => String(e.eventId)));
  const started = events.filter((e) => e.activityTaskStartedEventAttributes && scheduledIds.has(String(e.activityTaskStartedEventAttributes.scheduledEventId)));
  const completed = events.filter(
    (e) => e.activityTaskCompletedEventAttributes && scheduledIds.has(String(e.activityTaskCompletedEventAttributes.scheduledEventId)),
  );
  return {
    scheduled: scheduledIds.size,
    startedAttempts: started.map((e) => e.activityTaskStartedEventAttributes!.attempt ?? 0),
    completed: completed.length,
  };
}

/** A deferred promise a test resolves by hand. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}
