import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, lstatSync, mkdirSync, openSync, statSync, unlinkSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { residentSettings, type ResidentSettings } from '../config/resident';

/*
 * The caller's side of the resident emitter (src/cli/resident.ts): `wakegate emit` asks a process that
 * already holds the deployment and a Temporal connection, instead of loading both (about 0.8 s of a
 * 1 s call). Built as a bundle of its own (lib/cli/resident-link.js) that bin/wakegate.js loads before
 * anything else: node built-ins only, no zod, no Temporal client, no commander. When no resident
 * process answers, it starts one for the next call and the emit runs in this process as before.
 */

/** A start lock older than this is left over from a resident process that never came up. */
const STALE_LOCK_MS = 30_000;
/** How long a caller waits for the resident process's answer before running the emit itself. */
const ANSWER_TIMEOUT_MS = 30_000;

/** What a resident process answers one call: the command's output and exit code, or that the caller must run it itself. */
export type ResidentReply = { code: number; stdout: string; stderr: string } | { fallback: string };

/**
 * The resident process's socket for this caller: one per working directory, node, compiled CLI and
 * environment (any variable can change what the deployment module builds), in a folder only this
 * user may enter (that folder's permissions are the resident process's auth).
 */
export function residentSocket(cliFile: string, settings: ResidentSettings = residentSettings(), cwd = process.cwd()): string {
  const identity = JSON.stringify([cwd, process.execPath, cliFile, statSync(cliFile).mtimeMs, settings.identity]);
  const id = createHash('sha256').update(identity).digest('hex').slice(0, 24);
  return path.join(residentDir(), `${id}.sock`);
}

/** `$TMPDIR/wakegate-<uid>`, made with mode 0700; throws when it is someone else's or open to others. */
export function residentDir(): string {
  const uid = process.getuid?.() ?? 0;
  const dir = path.join(tmpdir(), `wakegate-${uid}`);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const st = lstatSync(dir);
  if (!st.isDirectory() || st.uid !== uid || (st.mode & 0o077) !== 0) throw new Error(`${dir} is not a private folder of this user`);
  return dir;
}

/**
 * Whether this `emit` call can be answered by a resident process: not `--wait` (it waits for a run,
 * seconds at least), not `--file` (one process already), not a payload on standard input, not help.
 */
export function residentCanAnswer(argv: string[]): boolean {
  if (argv[0] !== 'emit') return false;
  for (let i = 1; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--wait' || a === '--file' || a.startsWith('--file=') || a === '-h' || a === '--help' || a === '--payload=-') return false;
    if (a === '--payload' && argv[i + 1] === '-') return false;
  }
  return true;
}

/** Send `argv` to the resident process at `socket`; undefined when none answers. */
export function askResident(socket: string, argv: string[]): Promise<ResidentReply | undefined> {
  return new Promise((resolve) => {
    const conn = connect(socket);
    let text = '';
    const done = (reply: ResidentReply | undefined) => {
      conn.destroy();
      resolve(reply);
    };
    conn.setTimeout(ANSWER_TIMEOUT_MS, () => done(undefined));
    conn.on('error', () => done(undefined));
    conn.on('connect', () => conn.end(`${JSON.stringify({ argv })}\n`));
    conn.on('data', (b: Buffer) => (text += b.toString('utf8')));
    conn.on('end', () => {
      try {
        done(JSON.parse(text) as ResidentReply);
      } catch {
        done(undefined);
      }
    });
  });
}

/** Start a resident process for `socket` in the background, unless one is starting already (its lock file). */
export function startResident(socket: string, bin: string): void {
  const lock = `${socket}.lock`;
  try {
    if (Date.now() - statSync(lock).mtimeMs > STALE_LOCK_MS) unlinkSync(lock);
  } catch {
    // no lock: nobody is starting one
  }
  try {
    closeSync(openSync(lock, 'wx', 0o600));
  } catch {
    return; // another caller is starting it
  }
  const child = spawn(process.execPath, [bin, 'resident', '--socket', socket], { detached: true, stdio: 'ignore' });
  child.on('error', () => undefined);
  child.unref();
}

/**
 * `wakegate emit` through a resident process: its exit code once its output is written, or undefined
 * when this call must run in this process: no resident process yet (one is then started for the next
 * call, once this call has reached Temporal: exit 0 or 3), or one that cannot answer this call.
 * `WAKEGATE_RESIDENT=off` never asks nor starts one.
 */
export async function emitViaResident(argv: string[], cliFile: string, bin: string): Promise<number | undefined> {
  const settings = residentSettings();
  if (!settings.enabled || !residentCanAnswer(argv)) return undefined;
  let socket: string;
  try {
    socket = residentSocket(cliFile, settings);
  } catch {
    return undefined; // no private folder for the socket: run here
  }
  // The event's time is fixed before it is sent: should the answer be lost, this process runs the same
  // event (same key, deduplicated), not one of a later time.
  if (!argv.some((a) => a === '--occurred-at' || a.startsWith('--occurred-at='))) {
    const at = ['--occurred-at', new Date().toISOString()];
    argv.splice(1, 0, ...at); // right after `emit`: never read as the value of a flag left without one
    process.argv.splice(3, 0, ...at);
  }
  const reply = await askResident(socket, argv);
  if (reply && !('fallback' in reply)) {
    process.stdout.write(reply.stdout);
    process.stderr.write(reply.stderr);
    return reply.code;
  }
  // Not for bad input or an unreachable Temporal: a resident process would have nothing to serve.
  process.once('exit', (code) => {
    if (code === 0 || code === 3) startResident(socket, bin);
  });
  return undefined;
}
