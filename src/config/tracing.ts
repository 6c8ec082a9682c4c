import { ConfigError } from './errors';

/** Which span exporters run: OTLP over HTTP (JSON), or JSON lines on stderr (`console`). */
export type TraceExporterKind = 'otlp' | 'console';

/** How spans are sampled: OpenTelemetry's `OTEL_TRACES_SAMPLER` names. */
export type TraceSamplerKind = 'always_on' | 'always_off' | 'traceidratio' | 'parentbased_always_on' | 'parentbased_always_off' | 'parentbased_traceidratio';

/**
 * Tracing settings, from OpenTelemetry's standard variables. Off unless they ask for it: an OTLP
 * endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) or an exporter
 * (`OTEL_TRACES_EXPORTER=otlp|console`); `OTEL_SDK_DISABLED=true` and `OTEL_TRACES_EXPORTER=none`
 * keep it off whatever else is set.
 */
export interface TracingConfig {
  enabled: boolean;
  exporters: TraceExporterKind[];
  /** `service.name` of every span's resource. */
  serviceName: string;
  /** `OTEL_RESOURCE_ATTRIBUTES`, decoded. */
  resourceAttributes: Record<string, string>;
  /** Where and how OTLP spans go. `headers` may hold credentials: never log them. */
  otlp: { url: string; headers: Record<string, string>; timeoutMs: number };
  sampler: { kind: TraceSamplerKind; ratio: number };
}

const SAMPLERS: readonly TraceSamplerKind[] = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
];
const DEFAULT_ENDPOINT = 'http://localhost:4318';
const DEFAULT_SERVICE = 'wakegate';

const fail = (variable: string, message: string): never => {
  throw new ConfigError(`invalid wakegate setting: ${variable}: ${message}`);
};

/** `key=value` pairs, comma-separated, values percent-encoded (W3C Baggage's format, as the OpenTelemetry spec says). */
function pairs(variable: string, spec: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  const entries = (spec ?? '').split(',').filter((e) => e.trim());
  for (const [i, entry] of entries.entries()) {
    const at = entry.indexOf('=');
    const key = at > 0 ? entry.slice(0, at).trim() : '';
    // The message names the entry's position, never its value (headers carry credentials).
    if (!key) fail(variable, `entry ${i + 1} is not key=value`);
    try {
      out[key] = decodeURIComponent(entry.slice(at + 1).trim());
    } catch {
      fail(variable, `the value of "${key}" is not valid percent-encoding`);
    }
  }
  return out;
}

function url(variable: string, value: string): string {
  try {
    const u = new URL(value);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('not http(s)');
    return value;
  } catch {
    return fail(variable, `"${value}" is not an http(s) URL`);
  }
}

function boolean(variable: string, value: string | undefined): boolean {
  const v = (value ?? '').trim().toLowerCase();
  if (v === '' || v === 'false') return false;
  if (v === 'true') return true;
  return fail(variable, `write true or false, not "${value}"`);
}

function timeout(env: NodeJS.ProcessEnv): number {
  const [variable, raw] = env.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT
    ? ['OTEL_EXPORTER_OTLP_TRACES_TIMEOUT', env.OTEL_EXPORTER_OTLP_TRACES_TIMEOUT]
    : ['OTEL_EXPORTER_OTLP_TIMEOUT', env.OTEL_EXPORTER_OTLP_TIMEOUT];
  if (!raw) return 10_000;
  const ms = Number(raw);
  return Number.isInteger(ms) && ms > 0 ? ms : fail(variable, `milliseconds, a whole number above 0, not "${raw}"`);
}

function exporters(env: NodeJS.ProcessEnv, endpointSet: boolean): TraceExporterKind[] {
  const raw = env.OTEL_TRACES_EXPORTER?.trim();
  // Unset: traces go out only when an endpoint says where (the spec's default exporter is otlp, but
  // wakegate sends nothing anywhere unless asked to).
  if (!raw) return endpointSet ? ['otlp'] : [];
  const names = [...new Set(raw.split(',').map((x) => x.trim().toLowerCase()))].filter(Boolean);
  if (names.includes('none')) return [];
  for (const n of names) {
    if (n !== 'otlp' && n !== 'console')
      fail('OTEL_TRACES_EXPORTER', `"${n}" is not supported; write otlp, console (JSON lines on stderr), both comma-separated, or none`);
  }
  return names as TraceExporterKind[];
}

function protocol(env: NodeJS.ProcessEnv): void {
  const [variable, raw] = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL
    ? ['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL]
    : ['OTEL_EXPORTER_OTLP_PROTOCOL', env.OTEL_EXPORTER_OTLP_PROTOCOL];
  if (raw && raw.trim() !== 'http/json') {
    fail(
      variable,
      `wakegate exports OTLP traces as http/json only, not "${raw}"; unset it or write http/json (a collector's OTLP/HTTP receiver, port 4318, takes JSON)`,
    );
  }
}

function sampler(env: NodeJS.ProcessEnv): TracingConfig['sampler'] {
  const kind = (env.OTEL_TRACES_SAMPLER?.trim() || 'parentbased_always_on') as TraceSamplerKind;
  if (!SAMPLERS.includes(kind)) fail('OTEL_TRACES_SAMPLER', `"${kind}" is not supported; write one of ${SAMPLERS.join(', ')}`);
  const raw = env.OTEL_TRACES_SAMPLER_ARG?.trim();
  const ratio = raw ? Number(raw) : 1;
  if (!(ratio >= 0 && ratio <= 1)) fail('OTEL_TRACES_SAMPLER_ARG', `a ratio between 0 and 1, not "${raw}"`);
  return { kind, ratio };
}

/** The tracing settings from `env`; a bad one throws {@link ConfigError} naming the variable (never a header's value). */
export function tracingConfig(env: NodeJS.ProcessEnv): TracingConfig {
  const tracesEndpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  const endpoint = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim();
  // The signal's own endpoint is used as given; the base endpoint gets the signal's path.
  const otlpUrl = tracesEndpoint
    ? url('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', tracesEndpoint)
    : `${url('OTEL_EXPORTER_OTLP_ENDPOINT', endpoint || DEFAULT_ENDPOINT).replace(/\/+$/, '')}/v1/traces`;
  const disabled = boolean('OTEL_SDK_DISABLED', env.OTEL_SDK_DISABLED);
  const kinds = disabled ? [] : exporters(env, Boolean(tracesEndpoint || endpoint));
  if (kinds.includes('otlp')) protocol(env);
  const resourceAttributes = pairs('OTEL_RESOURCE_ATTRIBUTES', env.OTEL_RESOURCE_ATTRIBUTES);
  return {
    enabled: kinds.length > 0,
    exporters: kinds,
    serviceName: env.OTEL_SERVICE_NAME?.trim() || resourceAttributes['service.name'] || DEFAULT_SERVICE,
    resourceAttributes,
    otlp: {
      url: otlpUrl,
      headers: {
        ...pairs('OTEL_EXPORTER_OTLP_HEADERS', env.OTEL_EXPORTER_OTLP_HEADERS),
        ...pairs('OTEL_EXPORTER_OTLP_TRACES_HEADERS', env.OTEL_EXPORTER_OTLP_TRACES_HEADERS),
      },
      timeoutMs: timeout(env),
    },
    sampler: sampler(env),
  };
}
