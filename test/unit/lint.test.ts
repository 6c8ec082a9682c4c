import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { ESLint } from 'eslint';

/*
 * The determinism lint holds at any depth under workflows/: the project's own eslint.config.mjs, run
 * through ESLint's Node API on in-memory code. The code is linted as if it were an existing file one
 * folder deeper (workflows/run/proxies.ts), so the type-aware rules find it in the TypeScript project.
 */
const root = path.resolve(__dirname, '..', '..');
const eslint = new ESLint({ cwd: root });

/** Lint a snippet as the file `filePath`; its imports are followed by a blank line, as the layout rules (import-x/newline-after-import) want. */
async function lint(code: string, filePath = 'workflows/run/proxies.ts'): Promise<{ ruleId: string | null; message: string }[]> {
  const spaced = code.replace(/^(import [^\n]*\n)(?!import |\n)/gm, '$1\n');
  const [result] = await eslint.lintText(spaced, { filePath: path.join(root, filePath) });
  assert.ok(result, 'ESLint returned no result');
  return result.messages.map((m) => ({ ruleId: m.ruleId, message: m.message }));
}

const restricted = (messages: { ruleId: string | null; message: string }[]) => messages.filter((m) => m.ruleId === 'no-restricted-imports');

describe('workflow import rules, one folder below workflows/', () => {
  test('a value import of activities is an error', async () => {
    const messages = await lint("import { createActivities } from '../../activities';\nexport const make = createActivities;\n");
    assert.equal(restricted(messages).length, 1, JSON.stringify(messages));
    assert.match(restricted(messages)[0]!.message, /import type/);
  });

  test('a value import of one activity module is an error too', async () => {
    const messages = await lint("import { scheduleMatchingTimes } from '../../activities/schedule/schedule';\nexport const times = scheduleMatchingTimes;\n");
    assert.equal(restricted(messages).length, 1, JSON.stringify(messages));
  });

  test('a type import of activities is allowed', async () => {
    const messages = await lint("import type { Activities } from '../../activities';\nexport type A = Activities;\n");
    assert.deepEqual(messages, []);
  });

  for (const folder of ['src/config', 'src/gate', 'src/coalescer', 'src/cli', 'src/console', 'src/trigger', 'workers', 'tools/devserver', 'tools/standins']) {
    test(`any import of ${folder}/ is an error`, async () => {
      const messages = await lint(`import type { X } from '../../${folder}/x';\nexport type Y = X;\n`);
      assert.equal(restricted(messages).length, 1, JSON.stringify(messages));
      assert.match(restricted(messages)[0]!.message, /process-side/);
    });
  }

  test('a Node built-in is an error', async () => {
    const messages = await lint("import { randomUUID } from 'node:crypto';\nexport const id = randomUUID;\n");
    assert.equal(restricted(messages).length, 1, JSON.stringify(messages));
  });

  test('pure modules stay allowed: agent policy types, contracts, ids, time, failure types', async () => {
    const messages = await lint(
      [
        "import type { AgentPolicy } from '../../src/core/policy';",
        "import type { ModelReply } from '../contracts';",
        "import { FailureType } from '../failures';",
        "import { agentEventId } from '../ids';",
        "import { isoSeconds } from '../time';",
        'export type P = [AgentPolicy, ModelReply];',
        'export const parts = [FailureType.UnknownAgent, agentEventId, isoSeconds] as const;',
        '',
      ].join('\n'),
    );
    assert.deepEqual(messages, []);
  });

  test('the same import is clean outside workflows/', async () => {
    const messages = await lint("import { createActivities } from '../../activities';\nexport const make = createActivities;\n", 'src/runtime/worker.ts');
    assert.deepEqual(restricted(messages), []);
  });
});

describe('import cycles', () => {
  test("a value import that closes a cycle is an error (import-x/no-cycle resolves the project's modules)", async () => {
    // src/core/ids.ts imports ./time; time.ts importing ./ids back closes the cycle.
    const messages = await lint("import { agentEventId } from './ids';\nexport const id = agentEventId;\n", 'src/core/time.ts');
    assert.deepEqual(
      messages.map((m) => m.ruleId),
      ['import-x/no-cycle'],
      JSON.stringify(messages),
    );
  });
});

describe('settings', () => {
  test('process.env is read only in src/config/', async () => {
    const code = "export const queue = process.env.WAKEGATE_TASK_QUEUE ?? 'wakegate';\n";
    assert.deepEqual(
      (await lint(code, 'src/gate/errors.ts')).map((m) => m.ruleId),
      ['no-restricted-properties'],
    );
    assert.deepEqual(await lint(code, 'src/config/temporal.ts'), []);
  });
});

describe('the examples are users of the public entry', () => {
  test('a product file that imports an example is an error', async () => {
    const messages = await lint("import { exampleOptions } from '../../examples/app';\nexport const opts = exampleOptions;\n", 'src/gate/gate.ts');
    const zone = messages.filter((m) => m.ruleId === 'import-x/no-restricted-paths');
    assert.equal(zone.length, 1, JSON.stringify(messages));
    assert.match(zone[0]!.message, /may not import the examples/);
  });

  test('an example may import the public entry', async () => {
    const messages = await lint("import { defineTool } from 'wakegate';\nexport const t = defineTool;\n", 'examples/app.ts');
    assert.deepEqual(
      messages.filter((m) => m.ruleId === 'import-x/no-restricted-paths' || m.ruleId === 'no-restricted-imports'),
      [],
    );
  });
});
