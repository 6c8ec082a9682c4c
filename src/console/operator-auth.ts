import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import basicAuth from '@fastify/basic-auth';
import csrfProtection from '@fastify/csrf-protection';
import formbody from '@fastify/formbody';
import secureSession from '@fastify/secure-session';
import escapeHtml from 'escape-html';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { errorBody } from '../core/error-body';
import { hostAllowed } from './operator-guard';
import { OperatorSessions } from './operator-sessions';
import { registerSignInThrottle } from './operator-throttle';

/** Who may act on the operator's listener, and how long a sign-in lasts. */
export interface OperatorAuthSettings {
  /** Operator name → secret. Empty: no sign-in, and the listener binds to loopback only. */
  operators: Readonly<Record<string, string>>;
  /** 32 bytes sealing the session cookie; several ingress processes behind one name share it. Absent: one per process. */
  sessionKey?: Buffer;
  /** A sign-in lasts this long from the sign-in, however active, s. */
  sessionTtlS: number;
  /** Names besides IP addresses and `localhost` the listener answers to and takes forms on (`WAKEGATE_OPERATOR_HOSTNAMES`). */
  hostnames?: readonly string[];
  /** Served behind TLS (`WAKEGATE_OPERATOR_TLS`): the session cookie is `Secure` and `__Host-` prefixed. */
  tls?: boolean;
  /** The proxies trusted to name the client (`WAKEGATE_OPERATOR_TRUST_PROXY`): Fastify's `trustProxy`, set where the listener is built. */
  trustProxy?: readonly string[];
}

/** The operator a request acts as: signed in on the page (`session`), by Basic credentials (`basic`), or nobody signed in (`open`: no operators configured, loopback only). */
export type Acting = { name: string; via: 'session' | 'basic' } | { via: 'open' };

declare module 'fastify' {
  interface FastifyRequest {
    acting?: Acting;
  }
}

/**
 * Why a form post is refused, or undefined when it came from this page: the browser's `Origin`
 * must be present (not `null`, which sandboxed frames send) and be this very host, `Sec-Fetch-Site`
 * (when sent) must say same-origin, and the host must be an IP address, `localhost` or one of the
 * configured `hostnames` (any other DNS name could be rebound to this port by another site).
 */
export function crossSiteRefusal(
  headers: { origin?: string; host?: string; 'sec-fetch-site'?: string | string[] },
  hostnames: ReadonlySet<string> = new Set(),
): string | undefined {
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
  if (!hostAllowed(from.host, hostnames))
    return `forms are taken on an IP address, localhost or a name in WAKEGATE_OPERATOR_HOSTNAMES only, not on ${from.hostname} (DNS rebinding)`;
  return undefined;
}

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

/**
 * Whether a refused request may be answered with a Basic challenge (`WWW-Authenticate`): only when
 * nothing marks it as a browser's (no `Origin`, `Referer` or `Sec-Fetch-*` header, no `text/html`
 * in `Accept`), as from curl or a script. A browser never gets one, so it never prompts for and
 * caches credentials that every other site's forms would then be sent with.
 */
export function mayChallenge(headers: Readonly<Record<string, string | string[] | undefined>>): boolean {
  if (headers.origin !== undefined || headers.referer !== undefined) return false;
  if (Object.keys(headers).some((h) => h.startsWith('sec-fetch-'))) return false;
  return !String(headers.accept ?? '').includes('text/html');
}

/** A browser loading a page (it is sent to /login rather than shown JSON). */
const isNavigation = (request: FastifyRequest) =>
  request.method === 'GET' && (request.headers['sec-fetch-mode'] === 'navigate' || String(request.headers.accept ?? '').includes('text/html'));

const unauthenticated = (request: FastifyRequest, reply: FastifyReply, message: string) => {
  if (mayChallenge(request.headers)) void reply.header('www-authenticate', 'Basic realm="wakegate operator", charset="UTF-8"');
  return reply.code(401).send(errorBody('unauthenticated', message));
};

/** The name in a Basic `Authorization` header, '' when there is none to read. */
function basicName(authorization: string): string {
  const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(authorization);
  if (!m) return '';
  const decoded = Buffer.from(m[1]!, 'base64').toString('utf8');
  return decoded.includes(':') ? decoded.slice(0, decoded.indexOf(':')) : '';
}

/** Form tokens already spent in this process, each kept as long as a session can last. */
class SpentTokens {
  private readonly spent = new Map<string, number>();
  constructor(private readonly ttlMs: number) {}
  /** True the first time a token is spent, false on every replay. */
  spend(token: string): boolean {
    const now = Date.now();
    const until = this.spent.get(token);
    if (until !== undefined && until > now) return false;
    if (this.spent.size >= 10_000) for (const [t, u] of this.spent) if (u <= now || this.spent.size >= 10_000) this.spent.delete(t);
    this.spent.set(token, now + this.ttlMs);
    return true;
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    operatorForms: { hostnames: ReadonlySet<string>; spent: SpentTokens };
  }
}

/**
 * Sign-in for the operator's listener, built from Fastify's own plugins: `@fastify/basic-auth` for
 * the CLI, scripts and metric scrapers (`Authorization: Basic name:secret`), and for the page a
 * sign-in form that opens a sealed session cookie (`@fastify/secure-session`: `HttpOnly`,
 * `SameSite=Strict`, expiring; `Secure` and `__Host-` behind TLS) with a single-use CSRF token on
 * every form (`@fastify/csrf-protection`). `onRequest` decides who each request acts as: a request
 * with neither a valid session nor valid Basic credentials gets 401 (a browser's page load is sent
 * to `/login`; only a non-browser gets a Basic challenge, see {@link mayChallenge}) before any
 * handler, so it changes nothing. Failed sign-ins are throttled and logged
 * (`registerSignInThrottle`). With no operators configured every request acts `open`, which the
 * listener allows on loopback only. A form post must also pass `requireFormProof`.
 */
export async function registerOperatorAuth(app: FastifyInstance, settings: OperatorAuthSettings, logger?: Logger): Promise<void> {
  const open = Object.keys(settings.operators).length === 0;
  const tls = settings.tls ?? false;
  app.decorate('operatorForms', { hostnames: new Set(settings.hostnames ?? []), spent: new SpentTokens(settings.sessionTtlS * 1000) });
  const sessionKey = settings.sessionKey ?? randomBytes(32);
  const sessions = new OperatorSessions(settings.operators, sessionKey, settings.sessionTtlS);
  const throttle = await registerSignInThrottle(app, logger);
  await app.register(formbody, { bodyLimit: 16 * 1024 });
  await app.register(secureSession, {
    key: sessionKey,
    // `__Host-`: the browser keeps it only from a secure origin, for this host and path `/`, no sub-domain can set it.
    cookieName: tls ? '__Host-wakegate_operator' : 'wakegate_operator',
    expiry: settings.sessionTtlS,
    cookie: { path: '/', httpOnly: true, sameSite: 'strict', secure: tls },
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
  const tooMany = (reply: FastifyReply, waitS: number) =>
    reply
      .code(429)
      .header('retry-after', String(waitS))
      .send(errorBody('too_many_sign_ins', `too many failed sign-ins from this client: try again in ${waitS} s`));

  app.addHook('onRequest', async (request, reply) => {
    if (open) {
      request.acting = { via: 'open' };
      return;
    }
    const path = request.url.split('?')[0]!;
    if (PUBLIC_PATHS.has(path)) return;
    const { authorization } = request.headers;
    if (authorization !== undefined) {
      const name = basicName(authorization);
      // Checked before the credentials are: past the limit a right guess is refused like a wrong one.
      const wait = await throttle.waitS(request, name);
      if (wait !== undefined) return tooMany(reply, wait);
      const refused = await new Promise<boolean>((resolve) => app.basicAuth(request, reply, (err?: Error) => resolve(err !== undefined)));
      // Any Authorization header is judged as Basic credentials: a wrong one is never passed on to the session.
      if (refused || !request.acting) {
        await throttle.failed(request, name, 'basic');
        return unauthenticated(request, reply, 'unknown operator or wrong secret');
      }
      return;
    }
    // Over once signed out, once the operator's secret changed, or a TTL after the sign-in (src/console/operator-sessions.ts).
    const name = sessions.operatorOf(request.session.get('operator'));
    if (name !== undefined) {
      request.acting = { name, via: 'session' };
      return;
    }
    if (path === '/supervisor' || isNavigation(request)) return reply.redirect('/login', 303);
    return unauthenticated(request, reply, 'sign in at /login, or send Basic credentials of a configured operator');
  });

  app.get('/login', async (request, reply) => {
    if (open) return reply.redirect('/supervisor', 303);
    return reply.type('text/html; charset=utf-8').header('cache-control', 'no-store').send(loginPage());
  });
  app.post<{ Body: { name?: unknown; secret?: unknown } }>('/login', async (request, reply) => {
    if (open) return reply.redirect('/supervisor', 303);
    const refusal = crossSiteRefusal(request.headers, app.operatorForms.hostnames);
    if (refusal) return reply.code(403).send(errorBody('cross_origin', refusal));
    const text = (v: unknown) => (typeof v === 'string' ? v : '');
    const tried = text(request.body?.name);
    const page = (status: number, error: string) => reply.code(status).type('text/html; charset=utf-8').send(loginPage(error));
    const wait = await throttle.waitS(request, tried);
    if (wait !== undefined) {
      void reply.header('retry-after', String(wait));
      return page(429, `too many failed sign-ins: try again in ${wait} s`);
    }
    const who = operatorFor(settings.operators, tried, text(request.body?.secret));
    if (!who) {
      await throttle.failed(request, tried, 'login');
      return page(401, 'unknown operator or wrong secret');
    }
    // A fresh session (and with it a fresh CSRF secret): nothing of a session before the sign-in carries over.
    request.session.regenerate();
    (request.session as { set(key: string, value: unknown): void }).set('operator', sessions.open(who));
    return reply.redirect('/supervisor', 303);
  });
  app.post('/logout', { preHandler: requireFormProof(app) }, async (request, reply) => {
    // The cookie is cleared, and a copy of it no longer opens anything here either.
    sessions.end(request.session.get('operator'));
    request.session.delete();
    return reply.redirect('/login', 303);
  });
}

/**
 * What a form post (any state-changing request) must carry besides its credentials. A request
 * that says it comes from a browser (it carries `Origin` or `Sec-Fetch-Site`) must come from the
 * page's own origin ({@link crossSiteRefusal}) and, with a session or Basic credentials, carry a
 * CSRF token the page gave it, good for one post: the session's CSRF secret is replaced once the
 * post is taken, and the token is remembered as spent by this process. A script with Basic
 * credentials and neither header needs neither; the open listener keeps the origin rule.
 */
export function requireFormProof(app: FastifyInstance) {
  return (request: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void): void => {
    const { hostnames, spent } = app.operatorForms;
    const fromBrowser = request.headers.origin !== undefined || request.headers['sec-fetch-site'] !== undefined;
    if (request.acting?.via === 'basic' && !fromBrowser) return done();
    const refusal = crossSiteRefusal(request.headers, hostnames);
    if (refusal) {
      void reply.code(403).send(errorBody('cross_origin', refusal));
      return done();
    }
    if (request.acting?.via === 'open') return done();
    app.csrfProtection(request, reply, () => {
      const token = (request.body as { _csrf?: unknown } | undefined)?._csrf;
      if (typeof token !== 'string' || !spent.spend(token)) {
        void reply.code(403).send(errorBody('csrf', 'this form was already sent: load the page again and send it from there'));
        return done();
      }
      (request.session as { set(key: string, value: unknown): void }).set('_csrf', undefined);
      done();
    });
  };
}

/** The CSRF token for the page's forms when the request acts as an operator (in a session, or a browser with Basic credentials). */
export function formToken(request: FastifyRequest, reply: FastifyReply): string | undefined {
  return request.acting && request.acting.via !== 'open' ? reply.generateCsrf() : undefined;
}
