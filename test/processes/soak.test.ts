import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');

/**
 * The short soak (SOAK_S=60): the production-shaped topology (its own dev server, Redis, stand-ins,
 * two workers, two ingresses, two queue consumers, schedules firing) under mixed load with a process
 * SIGKILLed every 20 s, a worker SIGSTOPped past its heartbeat timeout, Redis and the dev server
 * restarted, and operators terminating, killing and rearming runs and coalescers (every 8 s); its
 * accounting must find nothing lost, doubled or stuck, no wake key stuck and no absorbed event unseen.
 * Keeps the topology working in CI.
 */
test('the short soak: nothing lost, doubled or stuck while processes die', { timeout: 420_000 }, async () => {
  const env: Record<string, string | undefined> = { ...process.env, SOAK_S: '60', SOAK_FAULT_EVERY_S: '20', SOAK_DRAIN_S: '150', SOAK_RATE: '5' };
  // Its own dev server, whatever the environment names: the restart is part of the soak.
  for (const k of Object.keys(env)) if (k.startsWith('TEMPORAL_')) delete env[k];
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'tools', 'soak', 'main.ts')], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  const timer = setTimeout(() => child.kill('SIGTERM'), 400_000);
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  clearTimeout(timer);
  const last = stdout.trim().split('\n').at(-1) ?? '';
  let parsed: { soak?: Record<string, unknown> } = {};
  try {
    parsed = JSON.parse(last) as typeof parsed;
  } catch {
    assert.fail(`the soak's last line is not its JSON (exit ${code}):\n${stdout.slice(-2000)}\n${stderr.slice(-4000)}`);
  }
  const s = parsed.soak!;
  const why = `\n${stderr.slice(stderr.indexOf('SOAK ACCOUNTING'))}`;
  assert.equal(s.lost, 0, `lost events${why}`);
  assert.equal(s.duplicateEffects, 0, `duplicate effects${why}`);
  assert.equal(s.doubleAbsorbed, 0, `events taken by two runs${why}`);
  assert.equal(s.stuckRuns, 0, `runs stuck open${why}`);
  assert.equal(s.stuckKeys, 0, `wake keys whose last accepted event no closed run took${why}`);
  assert.equal(s.unseenAbsorbed, 0, `events listed as absorbed that their run's model never saw${why}`);
  assert.ok(Object.values(s.operator as Record<string, number>).reduce((a, b) => a + b, 0) >= 3, `operator faults: ${JSON.stringify(s.operator)}${why}`);
  assert.equal(s.invalidAccepted, 0, `invalid input accepted${why}`);
  assert.equal(s.answeredWithoutDecision, 0, `accepted answers without a decision${why}`);
  assert.equal(s.answersNamingTwoRuns, 0, `deliveries of one event told of two runs${why}`);
  assert.equal(s.fiveXxWithoutRetryAfter, 0, `5xx answers without Retry-After${why}`);
  assert.ok((s.kills as number) >= 1, `kills: ${String(s.kills)}${why}`);
  assert.deepEqual(s.restarts, { redis: 1, temporal: 1 });
  assert.ok((s.accepted as number) >= 150, `accepted: ${String(s.accepted)}${why}`);
  assert.ok((s.runs as number) >= 30, `runs: ${String(s.runs)}${why}`);
  assert.equal(code, 0, `exit code${why}`);
});
