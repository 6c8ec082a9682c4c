import path from 'node:path';
import { z } from 'zod';
import { loadClientConnectConfig, type ClientConnectConfig } from '@temporalio/envconfig';
import { ConfigError } from './errors';
import { tracingConfig, type TracingConfig } from './tracing';
import { OperatorEnv, operatorAuthConfig, parseOperators, type OperatorAuthConfig } from './operator';

/**
 * wakegate's own settings, parsed once from the environment. Temporal connection settings follow
 * Temporal's conventions (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS_*,
 * TEMPORAL_PROFILE and the TOML profile file) through @temporalio/envconfig, so the same code runs
 * against the dev server, a self-hosted cluster or Temporal Cloud. Nothing else reads process.env.
 */
const Env = OperatorEnv.extend({
  /** The module that composes this deployment (its default export is `createWakegate(...)`), relative to the working directory. */
  WAKEGATE_APP: z.string().min(1).default('wakegate.config.ts'),
  /** Task queue the wake workers poll. Scale out by starting more workers on it. */
  WAKEGATE_TASK_QUEUE: z.string().min(1).default('wakegate'),
  /** Activity task polls a worker keeps open at once (its activityTaskPollerBehavior, a simple maximum); default 10. */
  WAKEGATE_ACTIVITY_POLLERS: z.coerce.number().int().min(1).max(100).default(10),
  WAKEGATE_WORKFLOW_CACHE: z.coerce.number().int().min(10).max(100_000).optional(),
  /** Workflow tasks waiting on the task queue past which a new wake key's first event goes by update, not start (the gate's `startBacklog`; default 1,000). */
  WAKEGATE_START_BACKLOG: z.coerce.number().int().min(0).optional(),
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
  /** Where the supervisor pages: a PagerDuty Events API v2 endpoint (the local stand-in by default; https://events.pagerduty.com/v2/enqueue for PagerDuty). */
  WAKEGATE_PAGER_URL: z.string().url().default('http://127.0.0.1:7305/v2/enqueue'),
  /** The PagerDuty integration's routing key (any value for the stand-in). */
  WAKEGATE_PAGER_ROUTING_KEY: z.string().min(1).max(64).default('wakegate-local-stand-in'),
  /** HTTP timeout of one provider call, ms. */
  WAKEGATE_HTTP_TIMEOUT_MS: z.coerce.number().int().positive().default(10_000),
  /** Who a CLI kill, approval or rejection is recorded as when `--who` is not given. */
  USER: z.string().min(1).default('operator'),
  /** Webhook ingress (src/trigger/): listen address and port. */
  WAKEGATE_INGRESS_HOST: z.string().min(1).default('127.0.0.1'),
  WAKEGATE_INGRESS_PORT: z.coerce.number().int().min(0).max(65535).default(8787),
  /** Largest webhook body accepted, bytes (413 above). */
  WAKEGATE_INGRESS_BODY_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(256 * 1024),
  /** Per-source rate limit: sustained requests per second, and the burst a source may send at once (token bucket). */
  WAKEGATE_INGRESS_RATE_PER_S: z.coerce.number().positive().default(50),
  WAKEGATE_INGRESS_BURST: z.coerce.number().int().positive().default(50),
  /** Requests this ingress process works on at once; the next one is shed (429), never queued. */
  WAKEGATE_INGRESS_MAX_IN_FLIGHT: z.coerce.number().int().positive().default(128),
  /** Replay window on a signed timestamp, seconds: older or further in the future is refused (401). At most 300 (the Standard Webhooks library's own tolerance). */
  WAKEGATE_WEBHOOK_REPLAY_WINDOW_S: z.coerce.number().int().positive().max(300).default(300),
  /** How long one delivery waits for Temporal to accept it before the sender is told 503, ms. */
  WAKEGATE_INGRESS_TEMPORAL_TIMEOUT_MS: z.coerce.number().int().positive().default(5000),
  /** Retry-After on a 503 (Temporal unreachable), seconds. */
  WAKEGATE_INGRESS_RETRY_AFTER_S: z.coerce.number().int().positive().default(5),
  /** Both listeners: the whole request (headers and body) must arrive within this, ms; else 408 and the socket is closed. */
  WAKEGATE_INGRESS_REQUEST_TIMEOUT_MS: z.coerce.number().int().positive().default(15_000),
  /** Both listeners: the headers must arrive within this, ms (at most the request timeout). */
  WAKEGATE_INGRESS_HEADERS_TIMEOUT_MS: z.coerce.number().int().positive().default(10_000),
  /** Both listeners: an idle kept-alive socket is closed after this, ms (above a load balancer's idle timeout, 60 s on most). */
  WAKEGATE_INGRESS_KEEP_ALIVE_TIMEOUT_MS: z.coerce.number().int().positive().default(65_000),
  /** Both listeners: a socket that sends and receives nothing for this long is closed, ms. */
  WAKEGATE_INGRESS_IDLE_TIMEOUT_MS: z.coerce.number().int().positive().default(30_000),
  /** Where `npm start` serves the Temporal SDK's runtime metrics (Prometheus, `/metrics`), host:port; empty: off. */
  WAKEGATE_SDK_METRICS_ADDRESS: z.string().default('127.0.0.1:9464'),
  /** Redis for the queue trigger (redis://user:password@host:port, rediss:// for TLS); unset: `npm start` runs its own redis-server. */
  WAKEGATE_REDIS_URL: z.string().url().optional(),
  /** The password of the redis-server `npm start` runs (user `wakegate`); unset: generated once into .wakegate/redis/password. */
  WAKEGATE_REDIS_PASSWORD: z.string().min(16, 'WAKEGATE_REDIS_PASSWORD must be at least 16 characters').optional(),
  /** Queue trigger: reclaim a dead consumer's message after it sat unacknowledged this long, ms. */
  WAKEGATE_QUEUE_CLAIM_IDLE_MS: z.coerce.number().int().positive().default(30_000),
  /** Queue trigger: deliveries of one message before it goes to the dead-letter stream. */
  WAKEGATE_QUEUE_MAX_ATTEMPTS: z.coerce.number().int().positive().default(5),
  /** Queue trigger: messages one consumer works on at once (its read batch). */
  WAKEGATE_QUEUE_BATCH: z.coerce.number().int().positive().max(1000).default(32),
});

/** A webhook secret's variable: `WAKEGATE_WEBHOOK_SECRET_<SOURCE>` (upper case, `-` and `.` as `_`). */
export const WEBHOOK_SECRET_PREFIX = 'WAKEGATE_WEBHOOK_SECRET_';
const WebhookSecrets = z.record(z.string().regex(/^WAKEGATE_WEBHOOK_SECRET_[A-Z0-9_]+$/), z.string().min(8, 'a webhook secret has at least 8 characters'));

/** The webhook ingress and queue trigger settings (see src/trigger/ and docs/OPERATIONS.md). */
export interface IngressConfig {
  host: string;
  port: number;
  /** The operator's listener (supervisor page and actions, metrics, status): its own address, loopback by default. */
  operatorHost: string;
  operatorPort: number;
  /** Its operators (name → secret) and sessions, the host names it answers to, TLS and trusted proxies; no operators: no sign-in, loopback only. */
  operatorAuth: OperatorAuthConfig;
  bodyLimitBytes: number;
  ratePerSecond: number;
  burst: number;
  maxInFlight: number;
  replayWindowS: number;
  temporalTimeoutMs: number;
  unavailableRetryAfterS: number;
  /** Both listeners' timeouts on a client, ms (see src/config/listeners.ts). */
  requestTimeoutMs: number;
  headersTimeoutMs: number;
  keepAliveTimeoutMs: number;
  idleTimeoutMs: number;
  /** Webhook secrets that were set, by variable name. Never logged. */
  secrets: Record<string, string>;
  /** Its credentials included: never logged. */
  redisUrl?: string;
  /** The password of the embedded redis-server (`npm start`), when not generated. Never logged. */
  redisPassword?: string;
  /** The Temporal SDK's Prometheus endpoint (host:port), or '' for none. */
  sdkMetricsAddress: string;
  queue: { claimIdleMs: number; maxAttempts: number; batch: number };
}

/** Where the agents' model and effects go; chosen by configuration, defaults are the offline model and the local stand-ins. */
export interface OutsideConfig {
  model: { kind: 'offline' | 'openai'; baseUrl: string; apiKey: string; name: string };
  channel: { adapter: 'local' | 'slack' | 'http'; url: string };
  exportUrl: string;
  pulls: { adapter: 'local' | 'github'; url: string; token: string; base: string };
  dashboardUrl: string;
  /** The supervisor's pager (PagerDuty Events API v2, or the stand-in that speaks it). */
  pager: { url: string; routingKey: string };
  httpTimeoutMs: number;
}

/** How logs are written: see `WAKEGATE_LOG_FORMAT`. */
export type LogFormat = z.infer<typeof Env>['WAKEGATE_LOG_FORMAT'];

export interface Config {
  /** The deployment's module (WAKEGATE_APP), as given: resolved against the working directory by `loadApp`. */
  app: string;
  taskQueue: string;
  /** Activity task polls one worker keeps open. */
  activityPollers: number;
  /** Workflows one worker keeps in memory between their tasks (Temporal's sticky cache); past it the least recent is evicted and replays on its next task. */
  workflowCache?: number;
  /** The gates' `startBacklog` (WAKEGATE_START_BACKLOG): past this workflow backlog a new key's first event is sent by update. */
  startBacklog?: number;
  logLevel: z.infer<typeof Env>['WAKEGATE_LOG_LEVEL'];
  logFormat: LogFormat;
  connectTimeoutMs: number;
  outside: OutsideConfig;
  /** Who a person's CLI action is recorded as by default (`USER`, else "operator"). */
  operator: string;
  ingress: IngressConfig;
  /** Tracing (OpenTelemetry's standard OTEL_* variables, parsed in src/config/tracing.ts): off unless they ask for it. */
  tracing: TracingConfig;
  temporal: Required<Pick<ClientConnectConfig, 'namespace'>> & ClientConnectConfig;
}

export { ConfigError, parseOperators, type OperatorAuthConfig, type TracingConfig };

/** Parse wakegate's settings from `env` (default: the process environment); a bad one throws {@link ConfigError} naming it. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = Env.safeParse(env);
  if (!parsed.success) {
    const detail = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new ConfigError(`invalid wakegate setting: ${detail}`);
  }
  const connect = loadClientConnectConfig({ overrideEnvVars: env as Record<string, string> });
  return {
    app: parsed.data.WAKEGATE_APP,
    taskQueue: parsed.data.WAKEGATE_TASK_QUEUE,
    activityPollers: parsed.data.WAKEGATE_ACTIVITY_POLLERS,
    ...(parsed.data.WAKEGATE_WORKFLOW_CACHE !== undefined ? { workflowCache: parsed.data.WAKEGATE_WORKFLOW_CACHE } : {}),
    ...(parsed.data.WAKEGATE_START_BACKLOG !== undefined ? { startBacklog: parsed.data.WAKEGATE_START_BACKLOG } : {}),
    logLevel: parsed.data.WAKEGATE_LOG_LEVEL,
    logFormat: parsed.data.WAKEGATE_LOG_FORMAT,
    connectTimeoutMs: parsed.data.WAKEGATE_CONNECT_TIMEOUT_MS,
    outside: outsideConfig(parsed.data),
    operator: parsed.data.USER,
    ingress: ingressConfig(parsed.data, env),
    tracing: tracingConfig(env),
    temporal: {
      connectionOptions: { address: 'localhost:7233', ...connect.connectionOptions },
      namespace: connect.namespace ?? 'default',
    },
  };
}

function ingressConfig(e: z.infer<typeof Env>, env: NodeJS.ProcessEnv): IngressConfig {
  const set = Object.fromEntries(
    Object.entries(env).filter((kv): kv is [string, string] => kv[0].startsWith(WEBHOOK_SECRET_PREFIX) && typeof kv[1] === 'string' && kv[1] !== ''),
  );
  const secrets = WebhookSecrets.safeParse(set);
  if (!secrets.success) {
    // The message names the variable, never its value.
    const detail = secrets.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new ConfigError(`invalid wakegate setting: ${detail}`);
  }
  // Node refuses a headers timeout longer than the request timeout; say which setting is wrong instead.
  if (e.WAKEGATE_INGRESS_HEADERS_TIMEOUT_MS > e.WAKEGATE_INGRESS_REQUEST_TIMEOUT_MS)
    throw new ConfigError('invalid wakegate setting: WAKEGATE_INGRESS_HEADERS_TIMEOUT_MS must be at most WAKEGATE_INGRESS_REQUEST_TIMEOUT_MS');
  // A delivery waiting on Temporal sends nothing: the idle timeout must not close its socket first.
  if (e.WAKEGATE_INGRESS_TEMPORAL_TIMEOUT_MS >= e.WAKEGATE_INGRESS_IDLE_TIMEOUT_MS)
    throw new ConfigError('invalid wakegate setting: WAKEGATE_INGRESS_TEMPORAL_TIMEOUT_MS must be below WAKEGATE_INGRESS_IDLE_TIMEOUT_MS');
  return {
    host: e.WAKEGATE_INGRESS_HOST,
    port: e.WAKEGATE_INGRESS_PORT,
    operatorHost: e.WAKEGATE_OPERATOR_HOST,
    operatorPort: e.WAKEGATE_OPERATOR_PORT,
    operatorAuth: operatorAuthConfig(e),
    bodyLimitBytes: e.WAKEGATE_INGRESS_BODY_LIMIT_BYTES,
    ratePerSecond: e.WAKEGATE_INGRESS_RATE_PER_S,
    burst: e.WAKEGATE_INGRESS_BURST,
    maxInFlight: e.WAKEGATE_INGRESS_MAX_IN_FLIGHT,
    replayWindowS: e.WAKEGATE_WEBHOOK_REPLAY_WINDOW_S,
    temporalTimeoutMs: e.WAKEGATE_INGRESS_TEMPORAL_TIMEOUT_MS,
    unavailableRetryAfterS: e.WAKEGATE_INGRESS_RETRY_AFTER_S,
    requestTimeoutMs: e.WAKEGATE_INGRESS_REQUEST_TIMEOUT_MS,
    headersTimeoutMs: e.WAKEGATE_INGRESS_HEADERS_TIMEOUT_MS,
    keepAliveTimeoutMs: e.WAKEGATE_INGRESS_KEEP_ALIVE_TIMEOUT_MS,
    idleTimeoutMs: e.WAKEGATE_INGRESS_IDLE_TIMEOUT_MS,
    secrets: secrets.data,
    redisUrl: e.WAKEGATE_REDIS_URL,
    redisPassword: e.WAKEGATE_REDIS_PASSWORD,
    sdkMetricsAddress: e.WAKEGATE_SDK_METRICS_ADDRESS,
    queue: { claimIdleMs: e.WAKEGATE_QUEUE_CLAIM_IDLE_MS, maxAttempts: e.WAKEGATE_QUEUE_MAX_ATTEMPTS, batch: e.WAKEGATE_QUEUE_BATCH },
  };
}

function outsideConfig(e: z.infer<typeof Env>): OutsideConfig {
  return {
    model: { kind: e.WAKEGATE_MODEL, baseUrl: e.OPENAI_BASE_URL, apiKey: e.OPENAI_API_KEY, name: e.WAKEGATE_MODEL_NAME },
    channel: { adapter: e.WAKEGATE_CHANNEL_ADAPTER, url: e.WAKEGATE_CHANNEL_URL },
    exportUrl: e.WAKEGATE_EXPORT_URL,
    pulls: { adapter: e.WAKEGATE_PR_ADAPTER, url: e.WAKEGATE_PR_URL, token: e.GITHUB_TOKEN, base: e.WAKEGATE_PR_BASE },
    dashboardUrl: e.WAKEGATE_DASHBOARD_URL,
    pager: { url: e.WAKEGATE_PAGER_URL, routingKey: e.WAKEGATE_PAGER_ROUTING_KEY },
    httpTimeoutMs: e.WAKEGATE_HTTP_TIMEOUT_MS,
  };
}

/**
 * Where the Temporal binaries are looked for (the dev server, the time-skipping test server): an
 * explicit path each (`TEMPORAL_CLI_PATH`, `TEMPORAL_TEST_SERVER_PATH`), else `.temporal/venv`, else
 * the directories of `PATH`. Read on its own, not through {@link loadConfig}: setup and the test
 * runner need it before any wakegate setting matters.
 */
export interface BinarySettings {
  temporalCliPath?: string;
  temporalTestServerPath?: string;
  /** `PATH`, split into its directories. */
  searchPath: string[];
}

/** The {@link BinarySettings} from the environment. */
export function binarySettings(env: NodeJS.ProcessEnv = process.env): BinarySettings {
  return {
    temporalCliPath: env.TEMPORAL_CLI_PATH || undefined,
    temporalTestServerPath: env.TEMPORAL_TEST_SERVER_PATH || undefined,
    searchPath: (env.PATH ?? '').split(path.delimiter).filter(Boolean),
  };
}
