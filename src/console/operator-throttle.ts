import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';

/**
 * Failed sign-ins allowed before the next attempt is refused (429 with Retry-After) until the
 * window ends: per client address as the listener sees it (behind a proxy, the proxy's), and per
 * operator name tried, whichever is reached first. Successful sign-ins are not counted.
 */
export const SIGN_IN_LIMITS = {
  perClient: { max: 10, windowMs: 60_000 },
  perName: { max: 5, windowMs: 60_000 },
} as const;

/** A name tried is logged and counted at most this long (the rest is the sender's noise). */
const NAME_CHARS = 100;

declare module 'fastify' {
  interface FastifyRequest {
    /** The operator name a sign-in attempt on this request tried (for the throttle's key). */
    signInName?: string;
  }
}

/** Counts failed sign-ins (POST /login and Basic credentials) and refuses the attempts past {@link SIGN_IN_LIMITS}. */
export interface SignInThrottle {
  /** Seconds until this client and this name may try again, or undefined when neither is over its limit. Counts nothing. */
  waitS(request: FastifyRequest, name: string): Promise<number | undefined>;
  /** Count a failed attempt against the client and the name, and log it with the name tried (never the secret). */
  failed(request: FastifyRequest, name: string, via: 'login' | 'basic'): Promise<void>;
}

/**
 * The sign-in throttle, on `@fastify/rate-limit`'s counters (its in-process store: each ingress
 * process counts on its own). Every attempt is checked before its credentials are compared, so a
 * right guess past the limit is refused like a wrong one.
 */
export async function registerSignInThrottle(app: FastifyInstance, logger?: Logger): Promise<SignInThrottle> {
  await app.register(rateLimit, { global: false });
  const limiters = [
    app.createRateLimit({ max: SIGN_IN_LIMITS.perClient.max, timeWindow: SIGN_IN_LIMITS.perClient.windowMs, keyGenerator: (r) => `client:${r.ip}` }),
    app.createRateLimit({ max: SIGN_IN_LIMITS.perName.max, timeWindow: SIGN_IN_LIMITS.perName.windowMs, keyGenerator: (r) => `name:${r.signInName ?? ''}` }),
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
