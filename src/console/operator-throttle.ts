import { isIP } from 'node:net';
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';

/**
 * Failed sign-ins allowed before the next attempt is refused (429 with Retry-After) until the
 * window ends, all counted per client (the address the listener sees, or behind a trusted proxy
 * the one it forwards; an IPv6 client by its /64): per operator name it tried, and over every name.
 * Only a client's own failures ever refuse it: a stranger failing sign-ins for an operator's name
 * never locks that operator out elsewhere. Guessing from many clients at once meets the secrets'
 * length (16 characters at least) instead, and every failure is logged with its client.
 * Successful sign-ins are not counted.
 */
export const SIGN_IN_LIMITS = {
  perClient: { max: 10, windowMs: 60_000 },
  perNameAndClient: { max: 5, windowMs: 60_000 },
} as const;

/** A name tried is logged and counted at most this long (the rest is the sender's noise). */
const NAME_CHARS = 100;

declare module 'fastify' {
  interface FastifyRequest {
    /** The operator name a sign-in attempt on this request tried (for the throttle's key). */
    signInName?: string;
  }
}

/**
 * Who the throttle counts a request against: an IPv4 address as is (an IPv4-mapped IPv6 one as
 * IPv4), an IPv6 address by its /64 (one host or network holds all of it, so rotating addresses
 * within it does not reset the count).
 */
export function clientKey(ip: string): string {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped) return mapped[1]!;
  const bare = ip.split('%')[0]!;
  if (isIP(bare) !== 6) return ip;
  const [head = '', tail] = bare.split('::');
  const groups = (s: string) => (s ? s.split(':').flatMap((g) => (g.includes('.') ? ['0', '0'] : [g])) : []);
  const h = groups(head);
  const t = tail === undefined ? [] : groups(tail);
  const all = [...h, ...Array<string>(Math.max(0, 8 - h.length - t.length)).fill('0'), ...t];
  return `${all
    .slice(0, 4)
    .map((g) => parseInt(g, 16).toString(16))
    .join(':')}::/64`;
}

/** Counts failed sign-ins (POST /login and Basic credentials) and refuses the attempts past {@link SIGN_IN_LIMITS}. */
export interface SignInThrottle {
  /** Seconds until this client may try this name again, or undefined when it is under both its limits. Counts nothing. */
  waitS(request: FastifyRequest, name: string): Promise<number | undefined>;
  /** Count a failed attempt against the client and the (name, client), and log it with the name tried (never the secret). */
  failed(request: FastifyRequest, name: string, via: 'login' | 'basic'): Promise<void>;
}

/**
 * The sign-in throttle, on `@fastify/rate-limit`'s counters (its in-process store: each ingress
 * process counts on its own). An attempt is checked before its credentials are compared, so past
 * its limit a client's right guess is refused like a wrong one; the limits are the client's own.
 */
export async function registerSignInThrottle(app: FastifyInstance, logger?: Logger): Promise<SignInThrottle> {
  await app.register(rateLimit, { global: false });
  const limiters = [
    app.createRateLimit({ max: SIGN_IN_LIMITS.perClient.max, timeWindow: SIGN_IN_LIMITS.perClient.windowMs, keyGenerator: (r) => `client:${clientKey(r.ip)}` }),
    app.createRateLimit({
      max: SIGN_IN_LIMITS.perNameAndClient.max,
      timeWindow: SIGN_IN_LIMITS.perNameAndClient.windowMs,
      keyGenerator: (r) => `name:${JSON.stringify([clientKey(r.ip), r.signInName ?? ''])}`,
    }),
  ];
  const short = (name: string) => name.slice(0, NAME_CHARS);
  return {
    async waitS(request, name) {
      request.signInName = short(name);
      let wait: number | undefined;
      for (const limiter of limiters) {
        const r = await limiter(request, { increment: false });
        if (!r.isAllowed && r.remaining === 0) wait = Math.max(wait ?? 1, r.ttlInSeconds);
      }
      return wait;
    },
    async failed(request, name, via) {
      request.signInName = short(name);
      for (const limiter of limiters) await limiter(request);
      logger?.warn({ operator: request.signInName, client: request.ip, via }, 'operator sign-in failed');
    },
  };
}
