import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { RunResult } from '../../src/core/run-types';
import { useDevEnv, unique } from '../helpers/env';
import { userPackageLock } from '../helpers/user-package';
import { temporalCliPath, temporalTestServerPath } from '../../src/testing/binaries';
import { Webhook } from 'standardwebhooks';
import { Client, Connection } from '@temporalio/client';
import { freePort } from '../../src/testing/dev-server';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '..', '..');

/*
 * wakegate as a user gets it: `npm run build` builds the package (lib/: JS, .d.ts, source maps) and
 * `npm pack` makes its tarball; a user's own package outside this checkout (test/fixtures/user-package*, copied to a
 * temporary folder) depends on that tarball, installs it with `npm ci --offline` (from the local cache, under a lock made from this checkout's),
 * defines an agent, a tool with typed arguments, an effect and a model choice against 'wakegate'
 * alone, and runs it through createWakegate on a real dev server in its own process.
 */

const env = useDevEnv();
let work: string;
let tarball: string;
before(async () => {
  await env.ready();
  work = mkdtempSync(path.join(tmpdir(), 'wakegate-user-'));
  // The build prepack would run, then the pack without scripts: prepack's README swap would change
  // this checkout's README.md for the pack's length, under any test reading it meanwhile.
  await run('npm', ['run', 'build', '--silent'], { cwd: ROOT, maxBuffer: 16 * 1024 * 1024, timeout: 300_000 });
  const { stdout } = await run('npm', ['pack', '--silent', '--ignore-scripts', '--pack-destination', work], {
    cwd: ROOT,
    maxBuffer: 16 * 1024 * 1024,
    timeout: 300_000,
  });
  tarball = path.join(work, stdout.trim().split('\n').at(-1)!);
});
after(async () => {
  rmSync(work, { recursive: true, force: true });
});

/** A user's package in `dir`, installed offline from its package.json and a lock made from this checkout's. */
async function install(dir: string): Promise<string> {
  const user = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as Parameters<typeof userPackageLock>[2];
  writeFileSync(path.join(dir, 'package-lock.json'), userPackageLock(ROOT, tarball, user));
  await run('npm', ['ci', '--offline', '--no-audit', '--no-fund'], { cwd: dir, timeout: 300_000 });
  return dir;
}

const fixtures = new Map<string, Promise<string>>();
/** A fixture copied beside the tarball, installed offline (once per file). */
function installed(fixture: string): Promise<string> {
  const dir = path.join(work, fixture);
  const once = async () => {
    cpSync(path.join(__dirname, '..', 'fixtures', fixture), dir, { recursive: true });
    const pkg = path.join(dir, 'package.json');
    writeFileSync(pkg, readFileSync(pkg, 'utf8').replace('WAKEGATE_TARBALL', tarball));
    return install(dir);
  };
  if (!fixtures.has(fixture)) fixtures.set(fixture, once());
  return fixtures.get(fixture)!;
}

/** Runs the user's process and checks what a user expects: a run, a redelivery answered from it, one effect. */
async function runsBehindTheGate(dir: string, args: string[]): Promise<void> {
  const { stdout } = await run(process.execPath, args, {
    cwd: dir,
    env: { ...process.env, TEMPORAL_ADDRESS: env.server.address, WAKEGATE_TASK_QUEUE: unique('user-package'), WAKEGATE_LOG_LEVEL: 'warn', NODE_OPTIONS: '' },
    timeout: 120_000,
  });
  const out = JSON.parse(stdout.trim().split('\n').at(-1)!) as { first: string; again: string; result: RunResult };
  assert.equal(out.first, 'started');
  assert.equal(out.again, 'completed', 'the same release delivered again is answered from the run');
  assert.equal(out.result.terminalReason, 'success', out.result.summary);
  assert.equal(out.result.agent, 'release-notes');
  // The tool got its typed argument (the version, which the model took from the event) and the effect ran once.
  const notes = readFileSync(path.join(dir, 'release-notes.log'), 'utf8').trim().split('\n');
  assert.equal(notes.length, 1);
  assert.match(notes[0]!, /#append_note@n0 left-pad: left-pad 2\.0\.0: faster start$/);
  const committed = (out.result.output as { committed: { name: string; outcome: string }[] }).committed;
  assert.deepEqual(
    committed.map((e) => [e.name, e.outcome]),
    [['append_note', 'applied']],
  );
}

describe('a user package that installs the packed tarball', () => {
  test('the tarball ships compiled JS with types and source maps and the user docs, and no tests or tooling', async () => {
    const { stdout } = await run('tar', ['-tzf', tarball]);
    const files = stdout.split('\n').filter(Boolean);
    for (const f of [
      'package/lib/src/index.js',
      'package/lib/src/index.d.ts',
      'package/lib/src/index.js.map',
      'package/lib/workflows/index.js',
      'package/lib/cli/main.js',
      'package/bin/wakegate.js',
      'package/docs/EXTENDING.md',
      'package/docs/OPERATIONS.md',
    ]) {
      assert.ok(files.includes(f), `${f} is not in the tarball`);
    }
    assert.deepEqual(
      files.filter(
        (f) =>
          /^package\/(test|examples)\//.test(f) ||
          (f.startsWith('package/tools/') && !/^package\/tools\/bench\/results\/[^/]+\.svg$/.test(f)) ||
          f === 'package/docs/TESTS.md',
      ),
      [],
    );
  });

  test('plain JavaScript, node alone (no tsx, no TypeScript installed): its agent runs behind the gate; a redelivery is answered from the run; the command loads an .mjs deployment', async () => {
    const dir = await installed('user-package-js');
    for (const absent of ['tsx', 'typescript']) assert.ok(!existsSync(path.join(dir, 'node_modules', absent)), `${absent} was installed`);
    // Temporal's packages came in as peer dependencies, one version.
    assert.ok(existsSync(path.join(dir, 'node_modules', '@temporalio', 'worker', 'package.json')));
    await runsBehindTheGate(dir, ['main.js']);
    // The command loads an ES module deployment with node alone, and keys and admits through it.
    const emitted = await run(
      process.execPath,
      [
        path.join(dir, 'node_modules', 'wakegate', 'bin', 'wakegate.js'),
        'emit',
        '--source',
        'releases',
        '--entity',
        'right-pad',
        '--type',
        'published',
        '--payload',
        '{"version":"1.0.0"}',
      ],
      {
        cwd: dir,
        env: {
          ...process.env,
          TEMPORAL_ADDRESS: env.server.address,
          WAKEGATE_TASK_QUEUE: unique('user-package-mjs'),
          WAKEGATE_APP: 'deployment.mjs',
          NODE_OPTIONS: '',
        },
      },
    );
    const answer = JSON.parse(emitted.stdout) as { decision: string; agent: string };
    assert.deepEqual([answer.decision, answer.agent], ['started', 'release-notes']);
  });

  test('TypeScript with the user’s own loader (tsx): its agent, tool, effect and model run behind the gate', async () => {
    const dir = await installed('user-package');
    await runsBehindTheGate(dir, ['--import', require.resolve('tsx'), 'main.ts']);
  });
});

describe('a project from `wakegate init`, with the installed tarball', () => {
  test('its npm test and typecheck pass with no edit; its npm start (wakegate dev) serves its webhook, runs the agent and stops on Ctrl-C', async () => {
    // `wakegate init` as a user runs it: the command of the installed tarball, not this checkout's.
    const bin = path.join(await installed('user-package-js'), 'node_modules', 'wakegate', 'bin', 'wakegate.js');
    await run(process.execPath, [bin, 'init', 'ticket-bot', '--wakegate', `file:${tarball}`], { cwd: work });
    const dir = await install(path.join(work, 'ticket-bot'));
    // Temporal's binaries from this checkout's setup (wakegate setup finds them and installs nothing).
    const binaries = { TEMPORAL_CLI_PATH: temporalCliPath(), TEMPORAL_TEST_SERVER_PATH: temporalTestServerPath() };
    // Not NODE_TEST_CONTEXT: the project's own `node --test` would take itself for a child of this runner.
    const { NODE_TEST_CONTEXT: _context, ...inherited } = process.env;
    const childEnv = { ...inherited, ...binaries, NODE_OPTIONS: '' };
    const tested = await run('npm', ['test'], { cwd: dir, env: childEnv, timeout: 300_000 });
    assert.match(tested.stdout, /# pass 2\n# fail 0/, tested.stdout.slice(-2000));
    await run('npm', ['run', 'typecheck'], { cwd: dir, env: childEnv, timeout: 120_000 });

    const taskQueue = unique('init-project');
    // What `npm start` runs (`wakegate dev`, with its embedded server on free ports); npm itself would end by the signal.
    const scripts = (JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    assert.equal(scripts.start, 'wakegate dev');
    const [temporalPort, uiPort] = [await freePort(), await freePort()];
    const started = spawn(process.execPath, [path.join(dir, 'node_modules', 'wakegate', 'bin', 'wakegate.js'), 'dev', '--ui-port', String(uiPort)], {
      cwd: dir,
      env: {
        ...childEnv,
        TEMPORAL_ADDRESS: `localhost:${temporalPort}`,
        WAKEGATE_TASK_QUEUE: taskQueue,
        WAKEGATE_INGRESS_PORT: '0',
        WAKEGATE_OPERATOR_PORT: '0',
        WAKEGATE_LOG_LEVEL: 'warn',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    started.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const exited = new Promise<number | null>((resolve) => started.on('exit', (code) => resolve(code)));
    let connection: Connection | undefined;
    try {
      type Ready = { temporal: string; webUi: string; webhooks: string[]; agents: string[]; taskQueue: string };
      const ready = await new Promise<Ready>((resolve, reject) => {
        let out = '';
        started.stdout.on('data', (b: Buffer) => {
          out += b.toString();
          const line = out.split('\n').find((l) => l.startsWith('{'));
          if (line) resolve(JSON.parse(line) as Ready);
        });
        void exited.then((code) => reject(new Error(`wakegate dev exited (${code}) before it was ready:\n${stderr}`)));
      });
      assert.deepEqual(ready.agents, ['canary', 'triage']);
      assert.equal(ready.taskQueue, taskQueue);
      // Its own server, and the addresses it really listens on.
      assert.equal(ready.temporal, `127.0.0.1:${temporalPort}`);
      assert.equal(ready.webUi, `http://127.0.0.1:${uiPort}/namespaces/default`);
      assert.match(ready.webhooks[0]!, /^http:\/\/127\.0\.0\.1:\d+\/webhooks\//);
      // The tracker's notice, signed with the source's dev secret (npm start falls back to it: its own server, a loopback listener).
      const body = JSON.stringify({ action: 'opened', ticket: { id: 'T-42', title: 'Crash on save', updatedAt: '2026-12-04T10:00:00Z' } });
      const at = new Date();
      const signature = new Webhook('whsec_d2FrZWdhdGUtZGV2LXRpY2tldHMtc2VjcmV0').sign('msg_42', at, body);
      const res = await fetch(ready.webhooks[0]!, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'webhook-id': 'msg_42',
          'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
          'webhook-signature': signature,
        },
        body,
      });
      const answer = (await res.json()) as { decision: string; runKey: string };
      assert.equal(res.status, 202, JSON.stringify(answer));
      assert.equal(answer.decision, 'started');
      connection = await Connection.connect({ address: ready.temporal });
      const result = (await new Client({ connection }).workflow.getHandle(answer.runKey).result()) as RunResult;
      assert.equal(result.terminalReason, 'success', result.summary);
      const labels = readFileSync(path.join(dir, '.wakegate', 'labels.jsonl'), 'utf8')
        .trim()
        .split('\n');
      assert.deepEqual(
        labels.map((l) => (JSON.parse(l) as { ticketId: string; label: string }).ticketId),
        ['T-42'],
      );
    } finally {
      await connection?.close();
      started.kill('SIGINT');
    }
    assert.equal(await exited, 0, `wakegate dev did not stop cleanly on Ctrl-C:\n${stderr}`);
  });
});
