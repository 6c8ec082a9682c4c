import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Wakegate } from './wakegate';

/**
 * Load the deployment's module (WAKEGATE_APP, default `wakegate.config.ts` in the working directory;
 and return its default export, a `createWakegate(...)`. TypeScript is loaded
 * through tsx (registered here when the process was not started with it). A missing module or one
 * without a Wakegate as its default export fails with what to do.
 */
export function loadApp(app: string): Wakegate {
  const file = path.resolve(app);
  if (!existsSync(file)) {
    throw new Error(
      `wakegate: no deployment module at ${file}: write one whose default export is createWakegate({ agents, ... }), and name it with WAKEGATE_APP`,
    );
  }
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  if (!require.extensions['.ts']) (require('tsx/cjs/api') as { register(): void }).register();
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const mod = require(file) as { default?: unknown };
  const w = mod.default as Partial<Wakegate> | undefined;
  if (!w || typeof w.activities !== 'function' || !w.registry) {
    throw new Error(`wakegate: ${file} has no Wakegate as its default export: end it with \`export default createWakegate({ agents, ... })\``);
  }
  return w as Wakegate;
}
