// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { builtinModules } from 'node:module';
import { importX } from 'eslint-plugin-import-x';
import { createNodeResolver } from 'eslint-plugin-import-x/node-resolver';
import prettier from 'eslint-config-prettier';

/**
 * The product's layout, read from the tree: the four top-level folders Temporal's layout names, and
 * one folder per part under src/. The tooling (tools/), tests, examples and docs are not product.
 * test/unit/layout.test.ts holds docs/ARCHITECTURE.md's layout table to the same tree.
 */
export const PRODUCT_ROOTS = ['workflows', 'activities', 'workers', 'schedules', 'src'];
/** The other top-level folders: tooling, tests, examples (users of the public entry), docs, the command's launcher. */
export const NOT_PRODUCT = ['tools', 'test', 'examples', 'templates', 'docs', 'bin'];
export const SRC_PARTS = readdirSync(path.join(import.meta.dirname, 'src'), { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => d.name)
  .sort();
const product = PRODUCT_ROOTS.map((r) => `./${r}`);
/** The parts under src/, but these: as zone paths. */
const srcBut = (...but) => SRC_PARTS.filter((p) => !but.includes(p)).map((p) => `./src/${p}`);
/** Process-side parts a workflow may import types from (agent definitions carry code; workflows see their plain-JSON policy types). */
const WORKFLOW_TYPE_ONLY = ['agents', 'runtime'];

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];

export default tseslint.config(
  { ignores: ['node_modules/**', '.temporal/**', 'lib/**', 'bin/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/consistent-type-imports': 'error',
      // == and != coerce; only the null check (== null: null or undefined) is let through.
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      // Imports first, then a blank line, then code (import-x).
      'import-x/first': 'error',
      'import-x/newline-after-import': 'error',
      // Forgetting to await an activity, a signal or a Temporal client call loses its failure.
      '@typescript-eslint/no-floating-promises': [
        'error',
        // node:test reports a test's failure itself; its test() and describe() promises need no await.
        { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['test', 'describe', 'it', 'suite'] }] },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // Settings are parsed once, in src/config/ (STYLE: nothing else reads process.env). Benchmarks and the
    // soak read their own BENCH_* / SOAK_* knobs; the test runner and test helpers pass the environment on to children.
    files: ['**/*.ts'],
    ignores: ['src/config/**', 'tools/bench/**', 'tools/soak/**', 'tools/scripts/**', 'test/**'],
    rules: {
      'no-restricted-properties': ['error', { object: 'process', property: 'env', message: 'Read settings through src/config/config.ts (loadConfig).' }],
    },
  },
  {
    // Import cycles between modules hide the layering (trigger → gate → workflows ← activities).
    // import-x counts value imports only; test/unit/import-graph.test.ts also holds type-only imports to it.
    files: ['**/*.ts'],
    plugins: { 'import-x': importX },
    settings: {
      // Without these import-x resolves a .ts module but never reads it, and finds no cycle at all.
      'import-x/extensions': ['.ts', '.js', '.mjs'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      'import-x/resolver-next': [createNodeResolver({ extensions: ['.ts', '.js', '.json'] })],
    },
    rules: {
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      // The product is a library for users' agents: nothing in it may reach into the examples, which
      // are written against the public entry like any user's code.
      'import-x/no-restricted-paths': [
        'error',
        {
          zones: [
            {
              target: product,
              from: './examples',
              message: 'Product code may not import the examples: they are users of the public entry.',
            },
            {
              // The core holds plain contracts that workflow code and every process-side layer import: it imports none of them.
              target: './src/core',
              from: ['./workflows', './activities', './workers', './schedules', ...srcBut('core'), './examples', './tools'],
              message: 'src/core/ is the bottom layer: plain contracts, importing nothing of the project outside src/core/.',
            },
            {
              // Stages inside workflows/: the run knows only what its origin says of the coalescer, and
              // nothing of the supervisor's workflow; the commit, schedule and supervise stages know no other stage's workflow code.
              target: './workflows/run',
              from: ['./workflows/coalescer', './workflows/supervisor'],
              message: 'The run knows the coalescer and the supervisor only through its input (origin) and its activities.',
            },
            {
              target: './workflows/commit',
              from: ['./workflows/run', './workflows/coalescer', './workflows/schedule', './workflows/supervisor'],
              message: 'The commit stage takes staged effects and knows nothing of who started the run.',
            },
            {
              target: './workflows/schedule',
              from: ['./workflows/run', './workflows/coalescer', './workflows/supervisor', './workflows/commit'],
              message: 'The schedule stage starts runs by workflow type name, not by importing them.',
            },
            {
              target: './workflows/supervisor',
              from: ['./workflows/run', './workflows/coalescer', './workflows/schedule', './workflows/commit'],
              message: 'The supervisor is its own stage: it hears of runs through messages only.',
            },
            {
              // Tracing sits under the event's path (the gate, the ingress, the CLI and the workers call
              // it): it knows the plain contracts and the settings, nothing of the layers that use it.
              target: './src/tracing',
              from: ['./workflows', './activities', './workers', './schedules', ...srcBut('core', 'config', 'tracing')],
              message: "src/tracing/ imports src/core/ and src/config/ only: the layers on the event's path import it.",
            },
            {
              // The decision trail reads what Temporal records; the CLI and the operator's page show it. It knows neither of them.
              target: './src/trail',
              from: ['./src/cli', './src/console', './src/trigger', './src/runtime', './workers', './workflows', './activities'],
              message: 'src/trail/ reads Temporal as a client: the CLI and the ingress use it, it imports neither, nor workflow or activity code.',
            },
            {
              // Shadow runs drive a candidate's worker and read recorded runs as a client; the CLI shows the diff.
              target: './src/shadow',
              from: ['./src/cli', './src/console', './src/trigger', './workers', './workflows', './activities'],
              message: 'src/shadow/ runs a candidate through the runtime and reads Temporal as a client: it imports no CLI, workflow or activity code.',
            },
            {
              target: './workflows',
              from: './src/trail',
              message: 'Workflows may not import process-side modules: the trail reads Temporal as a client.',
            },
            {
              // Providers talk to the outside world for effects, tools and pages; they know nothing of the layers that use them.
              target: './src/providers',
              from: ['./workflows', './activities', './workers', './schedules', ...srcBut('core', 'config', 'providers')],
              message: 'src/providers/ are adapters to the outside world: they import src/core/ and src/config/ only.',
            },
            {
              // The webhook trigger serves senders; the console serves operators. The deployment puts their listeners side by side (src/processes/).
              target: './src/trigger',
              from: './src/console',
              message: 'src/trigger/ imports no console module: the console builds its own listener, and the deployment composes the two.',
            },
            {
              // The model adapters (the public entry's aiSdkModel, offlineModel, the providers): the run's activities call them.
              target: './src/models',
              from: ['./workflows', './activities', './workers', './schedules', ...srcBut('core', 'models')],
              message: 'src/models/ are the model adapters: they import src/core/ only.',
            },
          ],
        },
      ],
    },
  },
  {
    // Workflow code is replayed: it may not reach the outside world, the clock or the environment.
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            ...nodeBuiltins.map((name) => ({ name, message: 'Workflow code must be deterministic: no Node built-ins.' })),
            {
              name: '@temporalio/workflow',
              importNames: ['patched', 'deprecatePatch'],
              message: 'Patch IDs live in one registry: use isPatched() from workflows/patches.ts.',
            },
          ],
          // Globs, not relative paths: a file at any depth under workflows/ is held to the same rule.
          patterns: [
            {
              group: ['**/activities', '**/activities/**'],
              allowTypeImports: true,
              message: 'Import activities with `import type` only (their wire types live in src/core/contracts.ts).',
            },
            {
              group: [
                ...srcBut('core', ...WORKFLOW_TYPE_ONLY).flatMap((p) => [`**/${p.slice(2)}`, `**/${p.slice(2)}/**`]),
                '**/workers',
                '**/workers/**',
                '**/schedules',
                '**/schedules/**',
                '**/tools/**',
              ],
              message: 'Workflows may not import process-side modules: pass what they need as input or through an activity.',
            },
            {
              // Agent definitions carry code (tools, effects, models): workflows see their plain-JSON policy types only.
              group: [...WORKFLOW_TYPE_ONLY.flatMap((p) => [`**/src/${p}`, `**/src/${p}/**`]), '**/examples', '**/examples/**'],
              allowTypeImports: true,
              message: 'Workflows may not import process-side modules: pass what they need as input or through an activity.',
            },
            {
              group: ['@temporalio/activity', '@temporalio/client', '@temporalio/worker', '@temporalio/testing', '@temporalio/envconfig'],
              allowTypeImports: true,
              message: 'Workflow code runs in the workflow sandbox: only @temporalio/workflow and @temporalio/common.',
            },
          ],
        },
      ],
      'no-restricted-globals': [
        'error',
        { name: 'process', message: 'No environment inside a workflow: pass policy as input.' },
        { name: 'setTimeout', message: 'Use sleep() from @temporalio/workflow.' },
        { name: 'setInterval', message: 'Use sleep() from @temporalio/workflow.' },
      ],
      'no-restricted-syntax': [
        'error',
        {
          selector: "MemberExpression[object.name='Date'][property.name='now']",
          message: 'Use workflow time deliberately; Date.now() in a workflow is replay time, say why if you need it.',
        },
      ],
    },
  },
  {
    // The registry itself is where patched() and deprecatePatch() are called.
    files: ['workflows/patches.ts'],
    rules: { 'no-restricted-imports': 'off' },
  },
  {
    // A file or a function a reader cannot hold at once is a module or a machine waiting to be split.
    files: ['**/*.ts'],
    ignores: ['test/**', 'tools/bench/**', 'tools/scripts/**'],
    rules: {
      'max-lines': ['error', { max: 350, skipBlankLines: false, skipComments: false }],
      'max-lines-per-function': ['error', { max: 150, skipBlankLines: true, skipComments: true, IIFEs: true }],
    },
  },
  {
    // Product code is held closer, and split by role rather than squeezed under the cap. A function's
    // comments count: moving its words out of it is no split.
    files: PRODUCT_ROOTS.map((r) => `${r}/**/*.ts`),
    rules: {
      'max-lines': ['error', { max: 300, skipBlankLines: false, skipComments: false }],
      'max-lines-per-function': ['error', { max: 100, skipBlankLines: true, skipComments: false, IIFEs: true }],
      // What a module exports is its contract: its types are written, not inferred from its body.
      '@typescript-eslint/explicit-module-boundary-types': 'error',
    },
  },
  {
    // A user's plain-JavaScript package (test/dev-server/user-package.test.ts installs the tarball into it): CommonJS on Node.
    files: ['test/fixtures/**/*.js'],
    languageOptions: {
      sourceType: 'commonjs',
      globals: { require: 'readonly', module: 'writable', process: 'readonly', console: 'readonly', __dirname: 'readonly' },
    },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // The same package's ES module deployment (WAKEGATE_APP=deployment.mjs).
    files: ['test/fixtures/**/*.mjs'],
    languageOptions: { sourceType: 'module', globals: { process: 'readonly' } },
  },
  // Layout is prettier's (npm run format; lint checks it): no eslint rule may disagree with it.
  prettier,
);
