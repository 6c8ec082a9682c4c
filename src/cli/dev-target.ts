import type { Config } from '../config/config';
import { isLoopbackHost } from '../trigger/webhook/serve';
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
