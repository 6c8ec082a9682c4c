import { Client, Connection, type ClientInterceptors } from '@temporalio/client';
import type { Config } from './config';
import { TemporalUnreachableError } from './errors';

export { TemporalUnreachableError };

/**
 * Connect a client, failing within `connectTimeoutMs` with a clear error instead of hanging.
 * `interceptors`: the client's own (tracing's, so that its starts, updates and signals carry the trace).
 */
export async function connectClient(config: Config, opts: { interceptors?: ClientInterceptors } = {}): Promise<Client> {
  const address = config.temporal.connectionOptions.address ?? 'localhost:7233';
  let connection: Connection;
  try {
    connection = await Connection.connect({
      ...config.temporal.connectionOptions,
      connectTimeout: config.connectTimeoutMs,
    });
  } catch (err) {
    throw new TemporalUnreachableError(
      `Temporal is unreachable at ${address} (namespace ${config.temporal.namespace}): ${(err as Error).message}. ` +
        `Start the local dev server with 'npx wakegate dev' (in a checkout of wakegate: './temporal-dev.sh up'), or set TEMPORAL_ADDRESS / TEMPORAL_PROFILE.`,
    );
  }
  return new Client({ connection, namespace: config.temporal.namespace, ...(opts.interceptors ? { interceptors: opts.interceptors } : {}) });
}
