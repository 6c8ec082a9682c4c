// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { builtinModules } from 'node:module';
import { importX } from 'eslint-plugin-import-x';
import { createNodeResolver } from 'eslint-plugin-import-x/node-resolver';
import prettier from 'eslint-config-prettier';

/** Every folder of the product (not tests, benchmarks, scripts or examples), and its public entry. */
const product = [
  './activities',
  './agents',
  './cli',
  './config',
  './core',
  './devserver',
  './gate',
  './ingress',
  './providers',
  './runtime',
  './schedules',
  './standins',
  './supervisor',
  './tracing',
  './trail',
  './triggers',
  './workers',
  './workflows',
  './index.ts',
];

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
    // Settings are parsed once, in config/ (STYLE: nothing else reads process.env). Benchmarks and the
    // soak read their own BENCH_* / SOAK_* knobs; the test runner and test helpers pass the environment on to children.
    files: ['**/*.ts'],
    ignores: ['config/**', 'bench/**', 'soak/**', 'scripts/**', 'test/**'],
    rules: {
      'no-restricted-properties': ['error', { object: 'process', property: 'env', message: 'Read settings through config/config.ts (loadConfig).' }],
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
              target: './core',
              from: [...product.filter((f) => f !== './core'), './examples'],
              message: 'core/ is the bottom layer: plain contracts, importing nothing of the project outside core/.',
            },
            {
              // Stages inside workflows/: the run knows only what its origin says of the coalescer, and
              // nothing of the supervisor's workflow; the commit, schedule and supervise stages know no other stage's workflow code.
              target: './workflows/run',
              from: ['./workflows/coalesce', './workflows/supervise'],
              message: 'The run knows the coalescer and the supervisor only through its input (origin) and its activities.',
            },
            {
              target: './workflows/commit',
              from: ['./workflows/run', './workflows/coalesce', './workflows/schedule', './workflows/supervise'],
              message: 'The commit stage takes staged effects and knows nothing of who started the run.',
            },
            {
              target: './workflows/schedule',
              from: ['./workflows/run', './workflows/coalesce', './workflows/supervise', './workflows/commit'],
              message: 'The schedule stage starts runs by workflow type name, not by importing them.',
            },
            {
              target: './workflows/supervise',
              from: ['./workflows/run', './workflows/coalesce', './workflows/schedule', './workflows/commit'],
              message: 'The supervisor is its own stage: it hears of runs through messages only.',
            },
            {
              // Tracing sits under the event's path (the gate, the ingress, the CLI and the workers call
              // it): it knows the plain contracts and the settings, nothing of the layers that use it.
              target: './tracing',
              from: [
                './activities',
                './agents',
                './cli',
                './gate',
                './ingress',
                './providers',
                './runtime',
                './schedules',
                './supervisor',
                './triggers',
                './workers',
                './workflows',
              ],
              message: "tracing/ imports core/ and config/ only: the layers on the event's path import it.",
            },
            {
              // The decision trail reads what Temporal records; the CLI and the operator's page show it. It knows neither of them.
              target: './trail',
              from: ['./cli', './ingress', './runtime', './workers', './workflows', './activities'],
              message: 'trail/ reads Temporal as a client: the CLI and the ingress use it, it imports neither, nor workflow or activity code.',
            },
            {
              target: './workflows',
              from: './trail',
              message: 'Workflows may not import process-side modules: the trail reads Temporal as a client.',
            },
            {
              // Providers talk to the outside world for effects, tools and pages; they know nothing of the layers that use them.
              target: './providers',
              from: [
                './activities',
                './agents',
                './cli',
                './gate',
                './ingress',
                './runtime',
                './schedules',
                './supervisor',
                './tracing',
                './trail',
                './triggers',
                './workers',
                './workflows',
              ],
              message: 'providers/ are adapters to the outside world: they import core/ and config/ only.',
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
              message: 'Import activities with `import type` only (their wire types live in core/contracts.ts).',
            },
            {
              group: [
                '**/config',
                '**/config/**',
                '**/gate',
                '**/gate/**',
                '**/cli',
                '**/cli/**',
                '**/workers',
                '**/workers/**',
                '**/devserver',
                '**/devserver/**',
                '**/ingress',
                '**/ingress/**',
                '**/standins',
                '**/standins/**',
                '**/schedules',
                '**/schedules/**',
                '**/triggers',
                '**/triggers/**',
                '**/supervisor',
                '**/supervisor/**',
                '**/providers',
                '**/providers/**',
                '**/tracing',
                '**/tracing/**',
              ],
              message: 'Workflows may not import process-side modules: pass what they need as input or through an activity.',
            },
            {
              // Agent definitions carry code (tools, effects, models): workflows see their plain-JSON policy types only.
              group: ['**/agents', '**/agents/**', '**/runtime', '**/runtime/**', '**/examples', '**/examples/**', '**/definitions', '**/definitions/**'],
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
    ignores: ['test/**', 'bench/**', 'scripts/**'],
    rules: {
      'max-lines': ['error', { max: 350, skipBlankLines: false, skipComments: false }],
      'max-lines-per-function': ['error', { max: 150, skipBlankLines: true, skipComments: true, IIFEs: true }],
    },
  },
  // Layout is prettier's (npm run format; lint checks it): no eslint rule may disagree with it.
  prettier,
);
