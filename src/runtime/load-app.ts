import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Wakegate } from './wakegate';

/**
 * Load the deployment's module (WAKEGATE_APP, default `wakegate.config.ts` in the working directory)
 * and return its default export, a `createWakegate(...)`. A `.js` or `.cjs` module loads as it is, an
 * ES module (`.mjs`, or `.js` under `"type": "module"`) through Node's require of ES modules (Node
 * 20.19 and later; no top-level await); a `.ts` one through the process's TypeScript loader, or tsx
 * when it is installed (registered here when the process was not started with a loader). A missing
 * module, a `.ts` one with no loader, an ES module this Node cannot require, or one without a
 * Wakegate as its default export fails with what to do.
 */
export function loadApp(app: string): Wakegate {
  const file = path.resolve(app);
  if (!existsSync(file)) {
    throw new Error(
      `wakegate: no deployment module at ${file}: write one whose default export is createWakegate({ agents, ... }), and name it with WAKEGATE_APP`,
    );
  }
  if (/\.[cm]?ts$/.test(file) && !require.extensions['.ts']) registerTypeScript(file);
  const mod = requireModule(file);
  const w = mod.default as Partial<Wakegate> | undefined;
  if (!w || typeof w.activities !== 'function' || !w.registry) {
    throw new Error(`wakegate: ${file} has no Wakegate as its default export: end it with \`export default createWakegate({ agents, ... })\``);
  }
  return w as Wakegate;
}

function requireModule(file: string): { default?: unknown } {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    return require(file) as { default?: unknown };
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'ERR_REQUIRE_ESM')
      throw new Error(
        `wakegate: ${file} is an ES module, which this Node (${process.version}) cannot load here: use Node 20.19 or later, or make it CommonJS (.cjs)`,
      );
    if (code === 'ERR_REQUIRE_ASYNC_MODULE')
      throw new Error(
        `wakegate: ${file} (or a module it imports) uses top-level await, so it cannot be loaded synchronously: move the awaited work into a function`,
      );
    throw err;
  }
}

/** Registers tsx for a `.ts` deployment module, or says how to load one. */
function registerTypeScript(file: string): void {
  let api: { register(): void };
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    api = require('tsx/cjs/api') as { register(): void };
  } catch {
    throw new Error(
      `wakegate: ${file} is TypeScript and no TypeScript loader is installed: compile it to .js and name that in WAKEGATE_APP, ` +
        'or install tsx (npm install --save-dev tsx), or start node with your own loader (node --import tsx)',
    );
  }
  api.register();
}
