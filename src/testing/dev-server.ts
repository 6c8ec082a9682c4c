import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { promisify } from 'node:util';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { TypedSearchAttributes } from '@temporalio/common';
import { ALL_SEARCH_ATTRIBUTES } from '../core/search-attributes';
import { temporalCliPath } from './binaries';
import { stopProcess } from './process';

const execFileAsync = promisify(execFile);

/** A TCP port nobody is listening on right now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

export interface DevServerOptions {
  /** gRPC port; a free one by default. */
  port?: number;
  /** SQLite file; survives stop/start so a restart keeps the state. Default: a fresh temp file. */
  dbFilename?: string;
  /** Serve the Web UI on this port; headless when absent (unless `ui`). */
  uiPort?: number;
  /** Serve the Web UI on a free port (see {@link DevServer.uiUrl}); ignored when `uiPort` is given. */
  ui?: boolean;
  namespace?: string;
  /** Namespace retention (Temporal duration, e.g. '720h'). */
  retention?: string;
  /** How long to wait for the server to answer, in ms. Default 60 000 (Core's own limit is 5 s, too short here). */
  startTimeoutMs?: number;
  /** Server dynamic config (`--dynamic-config-value KEY=JSON`), e.g. a low `limit.historyCount.suggestContinueAsNew` for a test. */
  dynamicConfig?: Record<string, string | number | boolean>;
}

/**
 * The real Temporal dev server (`temporal server start-dev`) as a child process that tests, benchmarks
 * and `npm start` own: started on a free port with wakegate's search attributes, stoppable and
 * restartable on the same SQLite file (to test catch-up and restarts).
 */
export class DevServer {
  readonly port: number;
  readonly dbFilename: string;
  readonly namespace: string;
  /** The Web UI's port, when the server serves it. */
  readonly uiPort?: number;
  private child?: ChildProcess;
  private output = '';
  private outputHead = '';
  private outputChars = 0;

  private constructor(private readonly opts: DevServerOptions & { port: number; dbFilename: string }) {
    this.port = opts.port;
    this.dbFilename = opts.dbFilename;
    this.namespace = opts.namespace ?? 'default';
    this.uiPort = opts.uiPort;
  }

  static async start(opts: DevServerOptions = {}): Promise<DevServer> {
    for (let attempt = 1; ; attempt++) {
      const port = opts.port ?? (await freePort());
      const uiPort = opts.uiPort ?? (opts.ui ? await freePort() : undefined);
      const dbFilename = opts.dbFilename ?? path.join(mkdtempSync(path.join(tmpdir(), 'wakegate-dev-')), 'dev.db');
      const server = new DevServer({ ...opts, port, uiPort, dbFilename });
      try {
        await server.up();
        return server;
      } catch (err) {
        // A server that died while starting on ports chosen here (a port found free can be taken
        // before the server binds it) gets one more try on fresh ports; a second failure is loud.
        if (attempt >= 2 || opts.port !== undefined || !(err instanceof StartupExit)) throw err;
      }
    }
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** The Web UI's base URL (`http://127.0.0.1:<uiPort>`); throws when the server runs headless. */
  get uiUrl(): string {
    if (this.uiPort === undefined) throw new Error('this dev server runs headless: start it with { ui: true } or a uiPort');
    return `http://127.0.0.1:${this.uiPort}`;
  }

  /**
   * Start (or restart after {@link stop}) the server process and wait until it answers. A restart
   * keeps its port (clients address it), so a bind that fails because something else holds a port
   * for a moment is tried again, up to three times a second apart; a server that exits otherwise is loud.
   */
  async up(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.upOnce();
      } catch (err) {
        if (attempt >= 3 || !(err instanceof StartupExit) || !/address already in use/.test(err.message)) throw err;
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  }

  private async upOnce(): Promise<void> {
    if (this.child) return;
    const cli = temporalCliPath();
    const args = [
      'server',
      'start-dev',
      '--ip',
      '127.0.0.1',
      '--port',
      String(this.port),
      '--db-filename',
      this.dbFilename,
      '--namespace',
      this.namespace,
      '--log-level',
      'error',
      // WAL with synchronous=NORMAL: a committed write survives the server process being killed
      // (only an OS crash can lose the last transactions) and starts run about twice as fast.
      '--sqlite-pragma',
      'journal_mode=wal',
      '--sqlite-pragma',
      'synchronous=normal',
      '--dynamic-config-value',
      'frontend.enableUpdateWorkflowExecution=true',
      '--dynamic-config-value',
      'frontend.enableUpdateWorkflowExecutionAsyncAccepted=true',
      ...(this.uiPort !== undefined ? ['--ui-port', String(this.uiPort)] : ['--headless']),
      ...Object.entries(this.opts.dynamicConfig ?? {}).flatMap(([k, v]) => ['--dynamic-config-value', `${k}=${JSON.stringify(v)}`]),
      ...ALL_SEARCH_ATTRIBUTES.flatMap((k) => ['--search-attribute', `${k.name}=${TypedSearchAttributes.toMetadataType(k.type)}`]),
    ];
    this.output = '';
    this.outputHead = '';
    this.outputChars = 0;
    const child = spawn(cli, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    // The head (a panic's message) and the tail (its stack's end) of what the server printed.
    const keep = (b: Buffer) => {
      const text = b.toString();
      this.outputChars += text.length;
      if (this.outputHead.length < 4000) this.outputHead = (this.outputHead + text).slice(0, 4000);
      this.output = (this.output + text).slice(-8000);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    child.on('exit', () => {
      if (this.child === child) this.child = undefined;
    });
    const deadline = Date.now() + (this.opts.startTimeoutMs ?? 60_000);
    for (;;) {
      if (!this.child) throw new StartupExit(`temporal start-dev exited during start-up:\n${this.printed()}`);
      if (await this.answers()) break;
      if (Date.now() > deadline) {
        await this.stop();
        throw new Error(`temporal start-dev did not answer on ${this.address} in time:\n${this.printed()}`);
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    await this.cli(['operator', 'namespace', 'update', '--namespace', this.namespace, '--retention', this.opts.retention ?? '720h']);
  }

  /** What the server printed: all of it, or its head and its tail when the tail does not hold it all. */
  private printed(): string {
    return this.outputChars <= this.output.length ? this.output : `${this.outputHead}\n[...]\n${this.output}`;
  }

  /** Run the Temporal CLI against this server and return its stdout. */
  async cli(args: string[]): Promise<string> {
    const { stdout } = await execFileAsync(temporalCliPath(), [...args, '--address', this.address], { timeout: 30_000 });
    return stdout;
  }

  private async answers(): Promise<boolean> {
    try {
      await execFileAsync(temporalCliPath(), ['operator', 'cluster', 'health', '--address', this.address], { timeout: 5_000 });
      return true;
    } catch {
      return false;
    }
  }

  /** Stop the process (SIGTERM, then SIGKILL after 10 s). The SQLite file stays for a later {@link up}. */
  async stop(): Promise<void> {
    const child = this.child;
    if (!child) return;
    await stopProcess(child);
    this.child = undefined;
  }
}

/** The server process ended before it answered (see DevServer.start, which tries fresh ports once). */
class StartupExit extends Error {}
