import { loadConfig } from '../config/config';
import { loadApp } from '../runtime/load-app';
import type { Wakegate } from '../runtime/wakegate';

let loaded: Wakegate | undefined;

/** The deployment the CLI acts for (WAKEGATE_APP, default `wakegate.config.ts`), loaded once per call. */
export function app(): Wakegate {
  return (loaded ??= loadApp(loadConfig().app));
}
