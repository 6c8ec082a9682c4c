import type { ServerOptions } from 'node:http';
import type { IngressConfig } from './config';

/*
 * How the ingress's two listeners (the webhook listener, src/trigger/webhook/; the operator's,
 * src/console/) take connections: their timeouts, and whether an address is this machine's own.
 */

/** How long each listener waits on a client (a slice of {@link IngressConfig}). */
export type TransportSettings = Pick<IngressConfig, 'requestTimeoutMs' | 'headersTimeoutMs' | 'keepAliveTimeoutMs' | 'idleTimeoutMs'>;

/**
 * The timeouts both listeners run with, so a client that sends slowly cannot hold a socket (or,
 * with enough sockets, the process) for ever: the headers must arrive within `headersTimeoutMs`
 * and the whole request within `requestTimeoutMs` (else 408 and the socket is closed), a socket
 * silent for `idleTimeoutMs` is closed, and an idle kept-alive socket after `keepAliveTimeoutMs`.
 * Node checks the first two on a timer: every second, or sooner for the short timeouts of tests.
 */
export function transportOptions(t: TransportSettings): {
  http: ServerOptions;
  requestTimeout: number;
  keepAliveTimeout: number;
  connectionTimeout: number;
} {
  const connectionsCheckingInterval = Math.max(25, Math.min(1000, Math.floor(Math.min(t.requestTimeoutMs, t.headersTimeoutMs) / 4)));
  return {
    // Fastify hands `http` to http.createServer, then sets requestTimeout and keepAliveTimeout itself from its own options.
    http: { requestTimeout: t.requestTimeoutMs, headersTimeout: t.headersTimeoutMs, keepAliveTimeout: t.keepAliveTimeoutMs, connectionsCheckingInterval },
    requestTimeout: t.requestTimeoutMs,
    keepAliveTimeout: t.keepAliveTimeoutMs,
    connectionTimeout: t.idleTimeoutMs,
  };
}

const LOOPBACK = /^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|::1|localhost)$/;

/** Whether `host` (an IP literal or name, no port) is this machine's loopback: 127.0.0.0/8, ::1 or localhost. */
export function isLoopbackHost(host: string): boolean {
  return LOOPBACK.test(host.toLowerCase());
}
