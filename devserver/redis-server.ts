import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, mkdirSync, mkdtempSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MissingBinaryError } from './binaries';
import { freePort } from './dev-server';
import { stopProcess } from './process';

const CANDIDATES = ['/usr/bin/redis-server', '/usr/local/bin/redis-server'];

/** Debian's redis-server, or a loud error that says how to install it (never a reason to skip). */
export function redisServerPath(): string {
  for (const p of CANDIDATES) {
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      // next
    }
  }
  throw new MissingBinaryError(
    `redis-server not found (looked in ${CANDIDATES.join(', ')}). Install it with 'sudo apt-get update && sudo apt-get install -y redis-server' ` +
      `(or run 'bash scripts/ensure-setup.sh'), or point WAKEGATE_REDIS_URL at a running Redis.`,
  );
}

/**
 * A real redis-server as a child process that tests, benchmarks and `npm start` own: a free port on
 * 127.0.0.1, its data in its own directory with the append-only file fsynced on every write, so a
 * stop and {@link up} on the same directory keeps every acknowledged write (a broker restart).
 */
export class RedisServer {
  private child?: ChildProcess;
  private output = '';

  private constructor(
    readonly port: number,
    readonly dir: string,
  ) {}

  static async start(opts: { port?: number; dir?: string } = {}): Promise<RedisServer> {
    const dir = opts.dir ?? mkdtempSync(path.join(tmpdir(), 'wakegate-redis-'));
    mkdirSync(dir, { recursive: true });
    const server = new RedisServer(opts.port ?? (await freePort()), dir);
    await server.up();
    return server;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Start (or restart after {@link stop}) and wait until it accepts connections. */
  async up(): Promise<void> {
    if (this.child) return;
    const args = [
      '--port',
      String(this.port),
      '--bind',
      '127.0.0.1',
      '--dir',
      this.dir,
      '--appendonly',
      'yes',
      '--appendfsync',
      'always',
      '--save',
      '',
      '--daemonize',
      'no',
      '--protected-mode',
      'yes',
    ];
    const child = spawn(redisServerPath(), args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    this.output = '';
    const keep = (b: Buffer) => {
      this.output = (this.output + b.toString()).slice(-4000);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    child.on('exit', () => {
      if (this.child === child) this.child = undefined;
    });
    const deadline = Date.now() + 15_000;
    while (!(await this.answers())) {
      if (!this.child) throw new Error(`redis-server exited during start-up:\n${this.output}`);
      if (Date.now() > deadline) {
        await this.stop();
        throw new Error(`redis-server did not answer on port ${this.port}:\n${this.output}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  private answers(): Promise<boolean> {
    return new Promise((resolve) => {
      const socket = createConnection({ host: '127.0.0.1', port: this.port });
      socket.once('connect', () => socket.write('PING\r\n'));
      socket.once('data', (d) => {
        socket.destroy();
        resolve(d.toString().startsWith('+PONG'));
      });
      socket.once('error', () => resolve(false));
    });
  }

  /** Stop (SIGTERM: Redis flushes and exits; SIGKILL after 10 s). The data directory stays. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return;
    await stopProcess(child);
    this.child = undefined;
  }
}
