import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

const ROOT = path.resolve(__dirname, '..', '..');
const execFileAsync = promisify(execFile);

export type Role = 'worker' | 'ingress' | 'consumer';

/**
 * One process of the soak's topology (a worker, an ingress, a queue consumer): spawned with its
 * settings, its output kept in a log file, killable (SIGKILL), stoppable (SIGSTOP/SIGCONT) and
 * restartable on the same settings. `rss` samples its resident set with ps.
 */
export class SoakProcess {
  private child?: ChildProcess;
  private log: WriteStream;
  /** Every pid it ran as, in order. */
  readonly pids: number[] = [];
  starts = 0;

  constructor(
    readonly role: Role,
    readonly name: string,
    private readonly script: string,
    private readonly env: Record<string, string>,
    private readonly readyText: string,
    logDir: string,
  ) {
    this.log = createWriteStream(path.join(logDir, `${name}.log`), { flags: 'a' });
  }

  get pid(): number | undefined {
    return this.child?.exitCode === null && this.child.signalCode === null ? this.child.pid : undefined;
  }

  /** Spawn it and wait until it prints its ready line (or fail after `timeoutMs`). */
  async start(timeoutMs = 90_000): Promise<void> {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, this.script)], {
      cwd: ROOT,
      env: { ...process.env, WAKEGATE_LOG_LEVEL: 'info', WAKEGATE_LOG_FORMAT: 'json', ...this.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    this.starts++;
    this.pids.push(child.pid!);
    this.log.write(`--- start ${new Date().toISOString()} pid ${child.pid}\n`);
    let out = '';
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${this.name} not ready within ${timeoutMs} ms:\n${out.slice(-2000)}`)), timeoutMs);
      const onData = (b: Buffer) => {
        this.log.write(b);
        if (out.length < 20_000) out += b.toString();
        if (out.includes(this.readyText)) {
          clearTimeout(timer);
          resolve();
        }
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', onData);
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        this.log.write(`--- exit ${new Date().toISOString()} code ${code} signal ${signal}\n`);
        reject(new Error(`${this.name} exited (${code ?? signal}) before it was ready:\n${out.slice(-2000)}`));
      });
    });
  }

  /** SIGKILL it and wait for the exit. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }

  signal(sig: 'SIGSTOP' | 'SIGCONT'): void {
    this.child?.kill(sig);
  }

  /** Stop it for good at the end (SIGTERM, then SIGKILL). */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGCONT');
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
    this.log.end();
  }
}

/** Resident set of each pid, MB (ps); pids that are gone are left out. */
export async function rssMb(pids: number[]): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  if (!pids.length) return out;
  const { stdout } = await execFileAsync('ps', ['-o', 'pid=,rss=', '-p', pids.join(',')]).catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? '' }));
  for (const line of stdout.split('\n')) {
    const [pid, rss] = line.trim().split(/\s+/).map(Number);
    if (pid && rss) out.set(pid, Math.round(rss / 1024));
  }
  return out;
}
