import { z } from 'zod';
import { loadClientConnectConfig, type ClientConnectConfig } from '@temporalio/envconfig';

/**
 * wakegate's own settings, parsed once from the environment. Temporal connection settings follow
 * Temporal's conventions (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS_*,
 * TEMPORAL_PROFILE and the TOML profile file) through @temporalio/envconfig, so the same code runs
 * against the dev server, a self-hosted cluster or Temporal Cloud. Nothing else reads process.env.
 */
const Env = z.object({
  /** Task queue the wake workers poll. Scale out by starting more workers on it. */
  WAKEGATE_TASK_QUEUE: z.string().min(1).default('wakegate'),
  /** pino level for structured logs (stderr). */
  WAKEGATE_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** How long a client waits for Temporal to answer before saying it is unreachable, in ms. */
  WAKEGATE_CONNECT_TIMEOUT_MS: z.coerce.number().int().positive().default(5000),
});

export interface Config {
  taskQueue: string;
  logLevel: z.infer<typeof Env>['WAKEGATE_LOG_LEVEL'];
  connectTimeoutMs: number;
  temporal: Required<Pick<ClientConnectConfig, 'namespace'>> & ClientConnectConfig;
}

/** Thrown for a setting that does not parse; the message names the variable and the fix. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = Env.safeParse(env);
  if (!parsed.success) {
    const detail = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new ConfigError(`invalid wakegate setting: ${detail}`);
  }
  const connect = loadClientConnectConfig({ overrideEnvVars: env as Record<string, string> });
  return {
    taskQueue: parsed.data.WAKEGATE_TASK_QUEUE,
    logLevel: parsed.data.WAKEGATE_LOG_LEVEL,
    connectTimeoutMs: parsed.data.WAKEGATE_CONNECT_TIMEOUT_MS,
    temporal: {
      connectionOptions: { address: 'localhost:7233', ...connect.connectionOptions },
      namespace: connect.namespace ?? 'default',
    },
  };
}
