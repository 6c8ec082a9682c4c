import type { ChildProcess } from 'node:child_process';

/**
 * Stop a server process the project owns: SIGTERM (it flushes and exits), SIGKILL after `graceMs`,
 * resolving once it has exited. A process that already exited resolves at once.
 */
export async function stopProcess(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}
