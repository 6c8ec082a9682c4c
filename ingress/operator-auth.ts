import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import basicAuth from '@fastify/basic-auth';
import csrfProtection from '@fastify/csrf-protection';
import formbody from '@fastify/formbody';
import secureSession from '@fastify/secure-session';
import escapeHtml from 'escape-html';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** Who may act on the operator's listener, and how long a sign-in lasts. */
export interface OperatorAuthSettings {
  /** Operator name → secret. Empty: no sign-in, and the listener binds to loopback only. */
  operators: Readonly<Record<string, string>>;
  /** 32 bytes sealing the session cookie; several ingress processes behind one name share it. Absent: one per process. */
  sessionKey?: Buffer;
  /** A sign-in lasts this long, s. */
  sessionTtlS: number;
}

/** The operator a request acts as: signed in on the page (`session`), by Basic credentials (`basic`), or nobody signed in (`open`: no operators configured, loopback only). */
export type Acting = { name: string; via: 'session' | 'basic' } | { via: 'open' };

declare module 'fastify' {
  interface FastifyRequest {
    acting?: Acting;
  }
}

/** Host names a form may be posted to: IP literals and localhost (a DNS name could be rebound to this port by another site). */
const postableHost = (hostname: string) => hostname === 'localhost' || isIP(hostname.replace(/^\[|\]$/g, '')) !== 0;

/**
 * Why a form post is refused, or undefined when it came from this page: the browser's `Origin`
 * must be present (not `null`, which sandboxed frames send) and be this very host, `Sec-Fetch-Site`
 * (when sent) must say same-origin, and the host must not be a DNS name.
 */
export function crossSiteRefusal(headers: { origin?: string; host?: string; 'sec-fetch-site'?: string | string[] }): string | undefined {
  const { origin, host } = headers;
  if (!origin || origin === 'null' || !host) return 'post the form from this page (no Origin header: refused)';
  let from: URL;
  try {
    from = new URL(origin);
  } catch {
    return 'post the form from this page (unreadable Origin header)';
  }
  if (from.host !== host) return 'post the form from this page (another origin)';
  if (headers['sec-fetch-site'] !== undefined && headers['sec-fetch-site'] !== 'same-origin') return 'post the form from this page (not same-origin)';
  if (!postableHost(from.hostname)) return `forms are taken on an IP address or localhost only, not on ${from.hostname} (DNS rebinding); use the CLI`;
  return undefined;
}

const COOKIE = 'wakegate_operator';
const PUBLIC_PATHS = new Set(['/login']);

/** Constant-time comparison of two secrets of any length (compared as SHA-256 digests). */
function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());
}

/** The operator these credentials name, or undefined. Every configured operator is compared, so timing does not tell which names exist. */
export function operatorFor(operators: Readonly<Record<string, string>>, name: string, secret: string): string | undefined {
  let found: string | undefined;
  for (const [n, s] of Object.entries(operators)) if (sameSecret(n, name) && sameSecret(s, secret)) found = n;
  return found;
}

const e = (v: unknown) => escapeHtml(String(v ?? ''));

function loginPage(error?: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>wakegate operator sign-in</title>
<style>body{font:14px/1.4 system-ui,sans-serif;margin:2rem;max-width:28rem}label{display:flex;flex-direction:column;margin:.5rem 0}input{font:inherit;padding:.3rem}.err{background:#fbe4e2;padding:.5rem}</style></head><body>
<h1>Sign in</h1>
${error ? `<p class="err" data-testid="login-error">${e(error)}</p>` : ''}
<form method="post" action="/login" data-form="login">
<label>Operator<input name="name" required maxlength="100" autocomplete="username"></label>
<label>Secret<input name="secret" type="password" required maxlength="500" autocomplete="current-password"></label>
<button type="submit">Sign in</button></form></body></html>`;
}

const unauthenticated = (reply: FastifyReply, message: string) =>
  reply
    .code(401)
    .header('www-authenticate', 'Basic realm="wakegate operator", charset="UTF-8"')
    .send({ error: { code: 'unauthenticated', message } });

/**
 * Sign-in for the operator's listener, built from Fastify's own plugins: `@fastify/basic-auth` for
 * the CLI, scripts and metric scrapers (`Authorization: Basic name:secret`), and for the page a
 * sign-in form that opens a sealed session cookie (`@fastify/secure-session`: `HttpOnly`,
 * `SameSite=Strict`, expiring) with a CSRF token on every form (`@fastify/csrf-protection`).
 * `onRequest` decides who each request acts as: a request with neither a valid session nor valid
 * Basic credentials gets 401 (the page redirects to `/login`) before any handler, so it changes
 * nothing. With no operators configured every request acts `open`, which the listener allows on
 * loopback only. A form post in a session must also carry the page's own origin and its CSRF token
 * (`requireFormProof`).
 */
export async function registerOperatorAuth(app: FastifyInstance, settings: OperatorAuthSettings): Promise<void> {
  const open = Object.keys(settings.operators).length === 0;
  await app.register(formbody, { bodyLimit: 16 * 1024 });
  await app.register(secureSession, {
    key: settings.sessionKey ?? randomBytes(32),
    cookieName: COOKIE,
    expiry: settings.sessionTtlS,
    cookie: { path: '/', httpOnly: true, sameSite: 'strict' },
  });
  await app.register(csrfProtection, {
    sessionPlugin: '@fastify/secure-session',
    getToken: (req) => (req.body as { _csrf?: string } | undefined)?._csrf,
  });
  await app.register(basicAuth, {
    authenticate: false,
    validate: async (name, secret, req) => {
      const who = operatorFor(settings.operators, name, secret);
      if (!who) return new Error('unknown operator or wrong secret');
      req.acting = { name: who, via: 'basic' };
    },
  });

  app.addHook('onRequest', async (request, reply) => {
    if (open) {
      request.acting = { via: 'open' };
      return;
    }
    const path = request.url.split('?')[0]!;
    if (PUBLIC_PATHS.has(path)) return;
    if (request.headers.authorization !== undefined) {
      const refused = await new Promise<boolean>((resolve) => app.basicAuth(request, reply, (err?: Error) => resolve(err !== undefined)));
      // Any Authorization header is judged as Basic credentials: a wrong one is never passed on to the session.
      if (refused || !request.acting) return unauthenticated(reply, 'unknown operator or wrong secret');
      return;
    }
    const name = request.session.get('operator') as string | undefined;
    if (name && settings.operators[name] !== undefined) {
      request.acting = { name, via: 'session' };
      return;
    }
    if (request.method === 'GET' && path === '/supervisor') return reply.redirect('/login', 303);
    return unauthenticated(reply, 'sign in at /login, or send Basic credentials of a configured operator');
  });

  app.get('/login', async (request, reply) => {
    if (open) return reply.redirect('/supervisor', 303);
    return reply.type('text/html; charset=utf-8').header('cache-control', 'no-store').send(loginPage());
  });
  app.post<{ Body: { name?: string; secret?: string } }>('/login', async (request, reply) => {
    if (open) return reply.redirect('/supervisor', 303);
    const refusal = crossSiteRefusal(request.headers);
    if (refusal) return reply.code(403).send({ error: { code: 'cross_origin', message: refusal } });
    const who = operatorFor(settings.operators, request.body?.name ?? '', request.body?.secret ?? '');
    if (!who) return reply.code(401).type('text/html; charset=utf-8').send(loginPage('unknown operator or wrong secret'));
    // A fresh session (and with it a fresh CSRF secret): nothing of a session before the sign-in carries over.
    request.session.regenerate();
    (request.session as { set(key: string, value: unknown): void }).set('operator', who);
    return reply.redirect('/supervisor', 303);
  });
  app.post('/logout', { preHandler: requireFormProof(app) }, async (request, reply) => {
    request.session.delete();
    return reply.redirect('/login', 303);
  });
}

/**
 * What a form post in a session must carry besides the cookie: the page's own origin (a browser
 * elsewhere cannot post it) and the CSRF token the page gave it. A post with Basic credentials (a
 * script, no cookie) or on an open listener skips the token; the open listener keeps the origin rule.
 */
export function requireFormProof(app: FastifyInstance) {
  return (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void): void => {
    if (request.acting?.via === 'basic') return done();
    const refusal = crossSiteRefusal(request.headers);
    if (refusal) {
      void reply.code(403).send({ error: { code: 'cross_origin', message: refusal } });
      return done();
    }
    if (request.acting?.via !== 'session') return done();
    app.csrfProtection(request, reply, done);
  };
}

/** The CSRF token for the page's forms when the request acts in a session. */
export function formToken(request: FastifyRequest, reply: FastifyReply): string | undefined {
  return request.acting?.via === 'session' ? reply.generateCsrf() : undefined;
}
