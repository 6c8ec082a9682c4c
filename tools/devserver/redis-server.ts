import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { accessSync, constants, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MissingBinaryError } from '../../src/testing/binaries';
import { freePort } from '../../src/testing/dev-server';
import { stopProcess } from '../../src/testing/process';

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
      `(or run 'bash tools/scripts/ensure-setup.sh'), or point WAKEGATE_REDIS_URL at a running Redis.`,
  );
}

/** The user the embedded Redis lets in (its `default` user is off: a client without the password gets NOAUTH). */
export const REDIS_USER = 'wakegate';

/**
 * A real redis-server as a child process that tests, benchmarks and `npm start` own: a free port on
 * 127.0.0.1, its data in its own directory with the append-only file fsynced on every write, so a
 * stop and {@link up} on the same directory keeps every acknowledged write (a broker restart).
 * Only the user `wakegate` with the password gets in: the password given (WAKEGATE_REDIS_PASSWORD
 * under `npm start`), else the one in `<dir>/password`, else a new one written there (mode 0600).
 * It reaches redis-server in `<dir>/redis.conf` (mode 0600, the password's SHA-256 only), never
 * on its command line.
 */
export class RedisServer {
  private child?: ChildProcess;
  private output = '';

  private constructor(
    readonly port: number,
    readonly dir: string,
    private readonly password: string,
  ) {}

  static async start(opts: { port?: number; dir?: string; password?: string } = {}): Promise<RedisServer> {
    const dir = opts.dir ?? mkdtempSync(path.join(tmpdir(), 'wakegate-redis-'));
    mkdirSync(dir, { recursive: true });
    const file = path.join(dir, 'password');
    let password = opts.password;
    if (!password && existsSync(file)) password = readFileSync(file, 'utf8').trim();
    if (!password) {
      password = randomBytes(24).toString('hex');
      writeFileSync(file, `${password}\n`, { mode: 0o600 });
    }
    const hash = createHash('sha256').update(password).digest('hex');
    writeFileSync(path.join(dir, 'redis.conf'), `user default off\nuser ${REDIS_USER} on #${hash} ~* &* +@all\n`, { mode: 0o600 });
    const server = new RedisServer(opts.port ?? (await freePort()), dir, password);
    await server.up();
    return server;
  }

  /** Where to connect, with the user and password: for clients only, never for a log. */
  get url(): string {
    return `redis://${REDIS_USER}:${encodeURIComponent(this.password)}@127.0.0.1:${this.port}`;
  }

  /** Where it listens, without credentials (for logs). */
  get address(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Start (or restart after {@link stop}) and wait until it accepts connections. */
  async up(): Promise<void> {
    if (this.child) return;
    const args = [
      path.join(this.dir, 'redis.conf'),
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

  /** Signs in and PINGs: true once the server answers PONG (after loading its data). */
  private answers(): Promise<boolean> {
    return new Promise((resolve) => {
      const socket = createConnection({ host: '127.0.0.1', port: this.port });
      const command = (...parts: string[]) => `*${parts.length}\r\n${parts.map((p) => `$${Buffer.byteLength(p)}\r\n${p}\r\n`).join('')}`;
      socket.once('connect', () => socket.write(command('AUTH', REDIS_USER, this.password) + command('PING')));
      let reply = '';
      socket.on('data', (d) => {
        reply += d.toString();
        const lines = reply.split('\r\n').filter(Boolean);
        if (lines.length >= 2 || reply.startsWith('-')) {
          socket.destroy();
          resolve(reply.includes('+PONG'));
        }
      });
      socket.once('error', () => resolve(false));
      socket.once('close', () => resolve(false));
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
