import { z } from 'zod';
import { loadClientConnectConfig, type ClientConnectConfig } from '@temporalio/envconfig';
import { ConfigError } from './errors';

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
  /** Log lines for people (`pretty`, pino-pretty) or machines (`json`); `auto`: pretty when stderr is a terminal. */
  WAKEGATE_LOG_FORMAT: z.enum(['auto', 'json', 'pretty']).default('auto'),
  /** How long a client waits for Temporal to answer before saying it is unreachable, in ms. */
  WAKEGATE_CONNECT_TIMEOUT_MS: z.coerce.number().int().positive().default(5000),
  /** Which model the agents call: `offline` (deterministic, no network) or `openai` (any OpenAI-compatible endpoint). */
  WAKEGATE_MODEL: z.enum(['offline', 'openai']).default('offline'),
  /** OpenAI-compatible endpoint, key and model name (only with WAKEGATE_MODEL=openai). */
  OPENAI_BASE_URL: z.string().url().default('https://api.openai.com/v1'),
  OPENAI_API_KEY: z.string().default(''),
  WAKEGATE_MODEL_NAME: z.string().min(1).default('gpt-4o-mini'),
  /** Channel adapter: `local` stand-in, `slack` incoming webhook, or `http` (any endpoint that honours Idempotency-Key). */
  WAKEGATE_CHANNEL_ADAPTER: z.enum(['local', 'slack', 'http']).default('local'),
  /** URL of the channel (stand-in base URL, Slack webhook URL, or the generic HTTP endpoint). */
  WAKEGATE_CHANNEL_URL: z.string().url().default('http://127.0.0.1:7301'),
  /** Export service (stand-in API: POST /exports, GET /exports?reference=). */
  WAKEGATE_EXPORT_URL: z.string().url().default('http://127.0.0.1:7302'),
  /** Pull-request adapter: `local` stand-in or `github`. */
  WAKEGATE_PR_ADAPTER: z.enum(['local', 'github']).default('local'),
  /** Stand-in PR service base URL, or the GitHub API base URL with WAKEGATE_PR_ADAPTER=github. */
  WAKEGATE_PR_URL: z.string().url().default('http://127.0.0.1:7303'),
  GITHUB_TOKEN: z.string().default(''),
  /** Base branch for GitHub pull requests. */
  WAKEGATE_PR_BASE: z.string().min(1).default('main'),
  /** Campaign dashboards the reporter reads (stand-in base URL). */
  WAKEGATE_DASHBOARD_URL: z.string().url().default('http://127.0.0.1:7304'),
  /** HTTP timeout of one provider call, ms. */
  WAKEGATE_HTTP_TIMEOUT_MS: z.coerce.number().int().positive().default(10_000),
});

/** Where the agents' model and effects go; chosen by configuration, defaults are the offline model and the local stand-ins. */
export interface OutsideConfig {
  model: { kind: 'offline' | 'openai'; baseUrl: string; apiKey: string; name: string };
  channel: { adapter: 'local' | 'slack' | 'http'; url: string };
  exportUrl: string;
  pulls: { adapter: 'local' | 'github'; url: string; token: string; base: string };
  dashboardUrl: string;
  httpTimeoutMs: number;
}

/** How logs are written: see `WAKEGATE_LOG_FORMAT`. */
export type LogFormat = z.infer<typeof Env>['WAKEGATE_LOG_FORMAT'];

export interface Config {
  taskQueue: string;
  logLevel: z.infer<typeof Env>['WAKEGATE_LOG_LEVEL'];
  logFormat: LogFormat;
  connectTimeoutMs: number;
  outside: OutsideConfig;
  temporal: Required<Pick<ClientConnectConfig, 'namespace'>> & ClientConnectConfig;
}

export { ConfigError };

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
    logFormat: parsed.data.WAKEGATE_LOG_FORMAT,
    connectTimeoutMs: parsed.data.WAKEGATE_CONNECT_TIMEOUT_MS,
    outside: outsideConfig(parsed.data),
    temporal: {
      connectionOptions: { address: 'localhost:7233', ...connect.connectionOptions },
      namespace: connect.namespace ?? 'default',
    },
  };
}

function outsideConfig(e: z.infer<typeof Env>): OutsideConfig {
  return {
    model: { kind: e.WAKEGATE_MODEL, baseUrl: e.OPENAI_BASE_URL, apiKey: e.OPENAI_API_KEY, name: e.WAKEGATE_MODEL_NAME },
    channel: { adapter: e.WAKEGATE_CHANNEL_ADAPTER, url: e.WAKEGATE_CHANNEL_URL },
    exportUrl: e.WAKEGATE_EXPORT_URL,
    pulls: { adapter: e.WAKEGATE_PR_ADAPTER, url: e.WAKEGATE_PR_URL, token: e.GITHUB_TOKEN, base: e.WAKEGATE_PR_BASE },
    dashboardUrl: e.WAKEGATE_DASHBOARD_URL,
    httpTimeoutMs: e.WAKEGATE_HTTP_TIMEOUT_MS,
  };
}

/** The outside world of the embedded default: offline model, stand-ins at these base URLs. */
export function localOutside(urls: { channel: string; exports: string; pulls: string; dashboards: string }): OutsideConfig {
  return {
    model: { kind: 'offline', baseUrl: '', apiKey: '', name: 'offline' },
    channel: { adapter: 'local', url: urls.channel },
    exportUrl: urls.exports,
    pulls: { adapter: 'local', url: urls.pulls, token: '', base: 'main' },
    dashboardUrl: urls.dashboards,
    httpTimeoutMs: 10_000,
  };
}
