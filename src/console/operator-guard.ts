import { isIP } from 'node:net';
import helmet from '@fastify/helmet';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { errorBody } from '../core/error-body';

/**
 * The host part of a `Host` header (lower case, IPv6 without brackets), or undefined when the
 * header is not a plain `host[:port]` (userinfo, a path, an empty port: refused like a stranger).
 */
export function hostnameOf(host: string | undefined): string | undefined {
  const m = /^(?:\[([0-9a-f:.]+)\]|([a-z0-9.-]+))(?::\d{1,5})?$/i.exec(host ?? '');
  if (!m) return undefined;
  return (m[1] ?? m[2]!).toLowerCase();
}

/**
 * Whether a `Host` header names this listener: an IP literal, `localhost`, or one of the names the
 * deployment configured (`WAKEGATE_OPERATOR_HOSTNAMES`). Any other name is what a DNS-rebinding
 * page sends (its own name, pointed at this address), so it is refused whatever the port.
 */
export function hostAllowed(host: string | undefined, hostnames: ReadonlySet<string>): boolean {
  const name = hostnameOf(host);
  if (name === undefined) return false;
  return isIP(name) !== 0 || name === 'localhost' || hostnames.has(name);
}

/** What the listener's guard needs: its configured host names, and whether it is served behind TLS. */
export interface OperatorGuardSettings {
  hostnames: ReadonlySet<string>;
  tls: boolean;
  logger?: Logger;
}

/**
 * The first things every request on the operator's listener meets, before the sign-in: security
 * headers (`@fastify/helmet`: a CSP that forbids framing and scripts from elsewhere, `X-Frame-Options:
 * DENY`, `nosniff`, `Referrer-Policy: same-origin`; HSTS only behind TLS), then the `Host`
 * allow-list (421 `unknown_host`), and the listener's errors in the shared JSON shape. Register it
 * first in the scope that holds the operator's paths: its 404 is answered in the scope too, so an
 * unknown path passes the same checks.
 */
export async function registerOperatorGuard(app: FastifyInstance, settings: OperatorGuardSettings): Promise<void> {
  await app.register(helmet, {
    contentSecurityPolicy: {
      useDefaults: true,
      directives: {
        'frame-ancestors': ["'none'"],
        // The pages style themselves inline (helmet's default style-src allows it) and run no script.
        'script-src': ["'none'"],
        'upgrade-insecure-requests': settings.tls ? [] : null,
      },
    },
    frameguard: { action: 'deny' },
    // Not `no-referrer`: under it a browser sends `Origin: null` with the page's own form posts, which the origin check refuses.
    referrerPolicy: { policy: 'same-origin' },
    hsts: settings.tls,
  });
  app.addHook('onRequest', async (request, reply) => {
    if (hostAllowed(request.headers.host, settings.hostnames)) return;
    const names = ['an IP address', 'localhost', ...settings.hostnames].join(', ');
    return reply
      .code(421)
      .send(
        errorBody(
          'unknown_host',
          `this listener answers to ${names} only, not to Host ${JSON.stringify(request.headers.host ?? '')}; set WAKEGATE_OPERATOR_HOSTNAMES to serve it under a name`,
        ),
      );
  });
  app.setNotFoundHandler((request, reply) => reply.code(404).send(errorBody('not_found', `no route ${request.method} ${request.url.split('?')[0]}`)));
  app.setErrorHandler((err: { statusCode?: number; code?: string; message: string }, request, reply) => {
    const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
    if (status === 500) {
      settings.logger?.error({ path: request.url.split('?')[0], err: err.message }, 'operator request failed');
      return reply.code(500).send(errorBody('internal', 'the operator listener failed on this request'));
    }
    const code = err.code?.startsWith('FST_CSRF_') ? 'csrf' : status === 413 ? 'too_large' : status === 415 ? 'unsupported_media_type' : 'bad_request';
    return reply.code(status).send(errorBody(code, err.message));
  });
}
