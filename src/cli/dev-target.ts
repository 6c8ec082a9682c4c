import type { Config } from '../config/config';
import { isLoopbackHost } from '../config/listeners';
import { UsageError } from './output';

/** The Temporal address when neither TEMPORAL_ADDRESS nor a profile names one. */
export const DEFAULT_TEMPORAL_ADDRESS = 'localhost:7233';

/** The host and port of a `host:port` address (`[v6]:port` too). */
function splitAddress(address: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(address);
  const port = Number(m?.[3]);
  if (!m || !Number.isInteger(port) || port <= 0 || port > 65535) throw new UsageError(`TEMPORAL_ADDRESS "${address}" names no port (host:port)`);
  return { host: m[1] ?? m[2] ?? '', port };
}

/**
 * The port `wakegate dev` starts its embedded dev server on: the configured address's, when that
 * address is this machine's loopback and asks for neither TLS nor an API key. Anything else
 * (TEMPORAL_ADDRESS, TEMPORAL_TLS*, TEMPORAL_API_KEY or a TOML profile naming another server) means
 * the shell is set up for a real Temporal, where a dev worker, its schedules and its supervisor
 * policy must not go by accident: refused with a {@link UsageError} that says how to go on purpose.
 * The message names the address, never a key.
 */
export function embeddedServerPort(temporal: Config['temporal']): number {
  const options = temporal.connectionOptions;
  const address = options.address ?? DEFAULT_TEMPORAL_ADDRESS;
  const { host, port } = splitAddress(address);
  const why = !isLoopbackHost(host)
    ? `names ${host}, not this machine's loopback`
    : options.apiKey
      ? 'comes with an API key'
      : options.tls
        ? 'asks for TLS'
        : undefined;
  if (why === undefined) return port;
  throw new UsageError(
    `wakegate dev starts a Temporal dev server and connects to its embedded server only, but the configured Temporal ` +
      `${address} (namespace ${temporal.namespace}) ${why}. To use the embedded server, unset TEMPORAL_ADDRESS, TEMPORAL_API_KEY, ` +
      `TEMPORAL_TLS* and TEMPORAL_PROFILE (or point TEMPORAL_CONFIG_FILE at a profile for localhost). ` +
      `To run this deployment's dev worker, schedules and webhooks against ${address} on purpose: wakegate dev --no-server`,
  );
}

/** The port flags of `wakegate dev`, as commander parses them (each unset: its variable, else its default). */
export interface DevPortOptions {
  server: boolean;
  /** The embedded server's gRPC port (default: TEMPORAL_ADDRESS's port, else 7233). */
  grpcPort?: string;
  /** The embedded server's Web UI port (default 8233). */
  uiPort?: string;
  /** The webhook listener's port, 0 for any free one (default: WAKEGATE_INGRESS_PORT, else 8787). */
  webhookPort?: string;
  /** The operator's listener's port (/supervisor, the trails, /metrics, /status), 0 for any free one (default: WAKEGATE_OPERATOR_PORT, else 8788). */
  operatorPort?: string;
  /** The Temporal SDK's Prometheus endpoint on 127.0.0.1 (default: off). */
  metricsPort?: string;
}

/** Every port `wakegate dev` listens on; `serverPort` and `uiPort` only with the embedded server. */
export interface DevPorts {
  serverPort?: number;
  uiPort: number;
  ingressPort: number;
  operatorPort: number;
  sdkMetricsAddress?: string;
}

/** A port number from a flag (0, where `min` allows it: any free port), or a {@link UsageError} naming the flag. */
function portFlag(flag: string, text: string, min = 1): number {
  const port = Number(text);
  if (!/^\d+$/.test(text) || port < min || port > 65535) throw new UsageError(`${flag} must be a port number from ${min} to 65535, got "${text}"`);
  return port;
}

/**
 * The ports of `wakegate dev`: each flag given overrides its variable. The embedded server's gRPC
 * port is still refused for a configured Temporal elsewhere ({@link embeddedServerPort}), and the
 * server's flags are refused with `--no-server` (that Temporal's ports are not dev's to choose).
 */
export function devPorts(opts: DevPortOptions, config: Pick<Config, 'temporal' | 'ingress'>): DevPorts {
  if (!opts.server) {
    const flag = opts.grpcPort !== undefined ? '--grpc-port' : opts.uiPort !== undefined ? '--ui-port' : undefined;
    if (flag) throw new UsageError(`${flag} sets a port of the embedded server, which --no-server does not start: drop one of them`);
  }
  const configured = opts.server ? embeddedServerPort(config.temporal) : undefined;
  const metrics = opts.metricsPort !== undefined ? portFlag('--metrics-port', opts.metricsPort) : undefined;
  return {
    ...(configured !== undefined ? { serverPort: opts.grpcPort !== undefined ? portFlag('--grpc-port', opts.grpcPort) : configured } : {}),
    uiPort: opts.uiPort !== undefined ? portFlag('--ui-port', opts.uiPort) : 8233,
    ingressPort: opts.webhookPort !== undefined ? portFlag('--webhook-port', opts.webhookPort, 0) : config.ingress.port,
    operatorPort: opts.operatorPort !== undefined ? portFlag('--operator-port', opts.operatorPort, 0) : config.ingress.operatorPort,
    ...(metrics !== undefined ? { sdkMetricsAddress: `127.0.0.1:${metrics}` } : {}),
  };
}
