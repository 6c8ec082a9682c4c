import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');

export interface CommandProcess {
  child: ChildProcess;
  /** The one JSON line the process prints on stdout once it is up (where it listens, what it serves). */
  ready: Promise<Record<string, unknown>>;
  /** Its exit: the code, or the signal that ended it. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Everything it wrote, stdout and stderr. */
  output(): string;
  /** Send `signal` and wait for the exit. */
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * A long-running `wakegate <args>` (`node bin/wakegate.js`, the compiled CLI) as a child process: a
 * worker, an ingress or a queue consumer, started as an operator would start it.
 */
export function spawnCommand(args: string[], env: Record<string, string>): CommandProcess {
  const child = spawn(process.execPath, [path.join(ROOT, 'bin', 'wakegate.js'), ...args], {
    cwd: ROOT,
    env: { ...process.env, WAKEGATE_LOG_FORMAT: 'json', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let stdout = '';
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  const ready = new Promise<Record<string, unknown>>((resolve, reject) => {
    child.stdout!.on('data', (b: Buffer) => {
      out += b.toString();
      stdout += b.toString();
      for (const line of stdout.split('\n').slice(0, -1)) {
        try {
          const up = JSON.parse(line) as Record<string, unknown>;
          if (up && typeof up === 'object' && !('error' in up)) resolve(up);
        } catch {
          // not the announcement: keep reading
        }
      }
    });
    child.stderr!.on('data', (b: Buffer) => (out += b.toString()));
    void exited.then(({ code, signal }) => reject(new Error(`wakegate ${args.join(' ')} exited (${code ?? signal}) before it was up:\n${out}`)));
  });
  ready.catch(() => undefined);
  return {
    child,
    ready,
    exited,
    output: () => out,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}
