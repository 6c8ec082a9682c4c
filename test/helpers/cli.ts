import { spawn } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
  /** stdout parsed as the one JSON object the CLI prints. */
  json: Record<string, unknown>;
}

/** Run `wakegate ARGS` as a subprocess (the package's bin entry), with extra environment and, if given, this text on stdin: its exit code and output as written. */
export function runCliRaw(args: string[], env: Record<string, string> = {}, timeoutMs = 60_000, stdin?: string): Promise<Omit<CliRun, 'json'>> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(ROOT, 'bin', 'wakegate.js'), ...args], {
      cwd: ROOT,
      env: { ...process.env, WAKEGATE_LOG_LEVEL: 'warn', ...env },
      stdio: [stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    if (stdin !== undefined) child.stdin!.end(stdin);
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr!.on('data', (b: Buffer) => (stderr += b.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`wakegate ${args.join(' ')} timed out; stderr: ${stderr}`));
    }, timeoutMs);
    // 'close', not 'exit': under load the output can still be in the pipes when the process has exited.
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr });
    });
  });
}

/** Run `wakegate ARGS` (runCliRaw), its stdout parsed as the one JSON object the CLI prints. */
export async function runCli(args: string[], env: Record<string, string> = {}, timeoutMs = 60_000, stdin?: string): Promise<CliRun> {
  const run = await runCliRaw(args, env, timeoutMs, stdin);
  try {
    return { ...run, json: JSON.parse(run.stdout) as Record<string, unknown> };
  } catch {
    throw new Error(`stdout is not one JSON object (exit ${run.code}):\n${run.stdout}\nstderr:\n${run.stderr}`);
  }
}
