import { statSync, unlinkSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import path from 'node:path';
import { Command, CommanderError } from 'commander';
import { loadConfig } from '../config/config';
import { temporalProfileFiles } from '../config/resident';
import { TemporalUnreachableError } from '../config/errors';
import { app } from './app';
import { defineEmit } from './emit-options';
import { answerEmit, keyedEmit, type EmitContext, type EmitOptions } from './emit';
import { reportError, type Out } from './output';
import { isUnreachable } from './unreachable';
import type { ResidentReply } from './resident-link';
import type { TriggerRegistry } from '../gate/trigger-registry';

/** A call this process has not answered by now goes back to its caller (who waits 30 s at most: src/cli/resident-link.ts). */
const CALL_DEADLINE_MS = 20_000;

/**
 * `wakegate resident --socket <path>` (hidden; started by the first `wakegate emit` that finds none,
 * src/cli/resident-link.ts): a process that loads the deployment and connects to Temporal once, then
 * answers `emit` calls on a Unix socket in a folder only its user may enter. Each call is parsed with
 * the same options, keyed by the deployment's gate and admitted with the same Temporal calls as an
 * emit in its own process; the answer and exit code go back to the caller. It exits after `idleS`
 * seconds without a call, on SIGTERM, or when a file of the deployment (any module it loaded
 * outside node_modules) changed since it started: the call that notices is run by its caller.
 */
export async function resident(opts: { socket: string; idle: string }): Promise<number> {
  const lock = `${opts.socket}.lock`;
  const idleMs = Math.max(1, Number(opts.idle) || 60) * 1000;
  // A file of the deployment (or the Temporal profile) edited while this process loads it counts as changed.
  const startedAtMs = Date.now();
  try {
    const config = loadConfig();
    const wakegate = app();
    const tracing = config.tracing.enabled ? (await import('../tracing/provider.js')).startTracing(config.tracing) : undefined;
    const { connectClient } = await import('../config/temporal.js');
    const client = await connectClient(config, tracing ? { interceptors: tracing.clientInterceptors } : {});
    const registry = wakegate.registry;
    const ctx: EmitContext = { client, gate: wakegate.gate(client, config.taskQueue), taskQueue: config.taskQueue, closeGate: false };
    const watched = deploymentFiles(startedAtMs);
    let inFlight = 0;
    let idle: NodeJS.Timeout | undefined;
    const stop = async () => {
      clearTimeout(idle);
      server.close();
      while (inFlight > 0) await new Promise((r) => setTimeout(r, 20));
      await ctx.gate.close().catch(() => undefined);
      await client.connection.close().catch(() => undefined);
      await tracing?.shutdown();
      process.exit(0);
    };
    const armIdle = () => {
      clearTimeout(idle);
      idle = setTimeout(() => void stop(), idleMs);
    };
    const server: Server = await listen(opts.socket, (conn) => {
      armIdle();
      inFlight++;
      void serve(conn, async (argv) => {
        if (changed(watched)) {
          void stop();
          return { fallback: 'the deployment changed since this resident process started' };
        }
        // A call stuck on a connection gone bad goes back to its caller (the same event: its time is
        // fixed), and this process goes, so the next emit starts a fresh one instead of waiting too.
        let late: NodeJS.Timeout | undefined;
        const stuck = new Promise<ResidentReply>((resolve) => {
          late = setTimeout(() => {
            setTimeout(() => process.exit(0), 1000).unref();
            resolve({ fallback: 'this resident process did not answer in time' });
          }, CALL_DEADLINE_MS);
        });
        return Promise.race([answer(ctx, registry, argv), stuck]).finally(() => clearTimeout(late));
      }).finally(() => inFlight--);
    }).catch(async (err: unknown) => {
      // Another process serves this socket already: leave nothing open behind.
      await client.connection.close().catch(() => undefined);
      await tracing?.shutdown();
      throw err;
    });
    process.once('SIGTERM', () => void stop());
    armIdle();
    return 0;
  } finally {
    unlinkQuietly(lock);
  }
}

/** One call: `argv` as `wakegate emit` parses it, admitted on `ctx`; anything this process should not answer goes back to the caller. */
async function answer(ctx: EmitContext, registry: TriggerRegistry, argv: string[]): Promise<ResidentReply> {
  let stdout = '';
  let stderr = '';
  const out: Out = { stdout: (t) => void (stdout += t), stderr: (t) => void (stderr += t) };
  const cmd = defineEmit(new Command('emit'))
    .exitOverride()
    .configureOutput({ writeOut: () => undefined, writeErr: () => undefined });
  try {
    cmd.parse(argv.slice(1), { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError) return { fallback: 'usage' }; // the caller reports it exactly as it always does
    throw err;
  }
  const opts = cmd.opts<EmitOptions & { file?: string }>();
  if (opts.wait || opts.file !== undefined || opts.payload === '-') return { fallback: 'not a call for a resident process' };
  let code: number;
  try {
    const { keyed, timeoutMs } = await keyedEmit(registry, opts);
    code = await answerEmit(ctx, keyed, opts, timeoutMs, out);
  } catch (err) {
    code = reportError(isUnreachable(err) ? new TemporalUnreachableError(`Temporal is unreachable: ${(err as Error).message}`) : err, out);
  }
  return { code, stdout, stderr };
}

/** Read one request line from `conn`, write the reply and close. */
async function serve(conn: Socket, handle: (argv: string[]) => Promise<ResidentReply>): Promise<void> {
  conn.on('error', () => undefined);
  // Events, not `for await`: the async iterator destroys the socket at the end of the call, before the reply.
  const text = await new Promise<string>((resolve) => {
    let t = '';
    conn.on('data', (b: Buffer) => (t += b.toString('utf8')));
    conn.on('end', () => resolve(t));
  });
  let reply: ResidentReply;
  try {
    const { argv } = JSON.parse(text) as { argv: string[] };
    reply = await handle(argv);
  } catch (err) {
    reply = { fallback: `resident process failed: ${(err as Error).message}` };
  }
  conn.end(JSON.stringify(reply));
}

/** Listen on `socket`; a socket file nobody answers on is left over and replaced, one another process answers on means it serves already. */
async function listen(socket: string, onConnection: (conn: Socket) => void): Promise<Server> {
  // Half-open: the caller ends its side once it has sent the call; the reply goes back after that.
  const server = createServer({ allowHalfOpen: true }, onConnection);
  for (let attempt = 0; ; attempt++) {
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(socket, () => {
          server.off('error', reject);
          resolve();
        });
      });
      return server;
    } catch (err) {
      if ((err as { code?: string }).code !== 'EADDRINUSE' || attempt > 0 || (await answers(socket)))
        throw new Error(`resident: ${socket} is in use`, { cause: err });
      unlinkQuietly(socket);
    }
  }
}

function answers(socket: string): Promise<boolean> {
  return new Promise((resolve) => {
    const c = connect(socket);
    c.once('connect', () => {
      c.destroy();
      resolve(true);
    });
    c.once('error', () => resolve(false));
  });
}

/** The modules of the deployment this process loaded (outside node_modules), with their modification times. */
/** A watched file that was absent at the start: changed once it exists. */
const ABSENT = -1;
/** A watched file written since this process began loading: changed at once (it may hold what was not loaded). */
const EDITED_WHILE_LOADING = -2;

/**
 * The files whose change retires this process, by mtime: every module it loaded outside
 * node_modules, and the Temporal profile files `loadConfig` reads (TEMPORAL_CONFIG_FILE, or the
 * default `temporal.toml`), present or not.
 */
export function deploymentFiles(startedAtMs: number, extra: readonly string[] = temporalProfileFiles()): Map<string, number> {
  const files = new Map<string, number>();
  const nodeModules = `${path.sep}node_modules${path.sep}`;
  for (const file of [...Object.keys(require.cache), process.argv[1] ?? '']) {
    if (!file || file.includes(nodeModules) || !path.isAbsolute(file)) continue;
    try {
      const { mtimeMs } = statSync(file);
      files.set(file, mtimeMs >= startedAtMs ? EDITED_WHILE_LOADING : mtimeMs);
    } catch {
      // not a file (a virtual module): nothing to watch
    }
  }
  for (const file of extra) files.set(file, mtimeOf(file, startedAtMs));
  return files;
}

function mtimeOf(file: string, startedAtMs: number): number {
  try {
    const { mtimeMs } = statSync(file);
    return mtimeMs >= startedAtMs ? EDITED_WHILE_LOADING : mtimeMs;
  } catch {
    return ABSENT;
  }
}

export function changed(files: Map<string, number>): boolean {
  for (const [file, mtimeMs] of files) if (mtimeMs === EDITED_WHILE_LOADING || mtimeOf(file, Infinity) !== mtimeMs) return true;
  return false;
}

function unlinkQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // already gone
  }
}
