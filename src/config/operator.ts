import { isIP } from 'node:net';
import { z } from 'zod';
import { ConfigError } from './errors';

/**
 * The operator listener's settings (part of wakegate's environment, parsed with the rest in
 * src/config/config.ts): where it binds, who may sign in, how sessions are sealed and how long they
 * last, the names it answers to, TLS, and which proxies in front of it are trusted.
 */
export const OperatorEnv = z.object({
  /**
   * Where the operator's listener binds: the `/supervisor` page and its actions (halt, reset, release,
   * discard, drain), `/metrics`, `/status`. Never on the public webhook listener; anywhere but
   * loopback only with WAKEGATE_OPERATORS set.
   */
  WAKEGATE_OPERATOR_HOST: z.string().min(1).default('127.0.0.1'),
  WAKEGATE_OPERATOR_PORT: z.coerce.number().int().min(0).max(65535).default(8788),
  /** The operators who may act there, `name:secret` comma-separated (secrets at least 16 characters); unset: no sign-in, loopback only. */
  WAKEGATE_OPERATORS: z.string().default(''),
  /** 64 hex digits sealing the operator's session cookie (share it between ingress processes); unset: a key per process. */
  WAKEGATE_OPERATOR_SESSION_KEY: z
    .string()
    .regex(/^[0-9a-fA-F]{64}$/, 'WAKEGATE_OPERATOR_SESSION_KEY must be 64 hex digits (32 bytes), e.g. from `openssl rand -hex 32`')
    .optional(),
  /** How long an operator's sign-in lasts from the sign-in, however active the session, s. */
  WAKEGATE_OPERATOR_SESSION_TTL_S: z.coerce
    .number()
    .int()
    .min(1)
    .max(7 * 86_400)
    .default(8 * 3600),
  /**
   * Host names the operator's listener answers to besides IP addresses and `localhost`, comma-separated
   * (e.g. `ops.example.com` behind a proxy); a request with any other `Host` is refused (421).
   */
  WAKEGATE_OPERATOR_HOSTNAMES: z
    .string()
    .default('')
    .transform((v) => list(v))
    .pipe(
      z.array(z.string().regex(/^[a-z0-9_-]+(\.[a-z0-9_-]+)*$/, 'WAKEGATE_OPERATOR_HOSTNAMES holds host names (no port, scheme or path), comma-separated')),
    ),
  /** The operator's listener is reached over TLS (a proxy in front): the session cookie is `Secure` and `__Host-` prefixed, and HSTS is sent. */
  WAKEGATE_OPERATOR_TLS: z.stringbool().default(false),
  /**
   * The proxies in front of the operator's listener, comma-separated IP addresses or ranges
   * (`10.0.0.1`, `10.0.0.0/8`, `fd00::/8`, or `loopback`, `linklocal`, `uniquelocal`): a request from
   * one of them is taken to come from the address it names in `X-Forwarded-For`, so the sign-in
   * throttle counts each client behind the proxy apart. Unset: the address the listener sees.
   */
  WAKEGATE_OPERATOR_TRUST_PROXY: z
    .string()
    .default('')
    .transform((v) => list(v, false))
    .pipe(
      z.array(
        z
          .string()
          .refine(
            isProxyAddress,
            'WAKEGATE_OPERATOR_TRUST_PROXY names the proxies: IP addresses or ranges (10.0.0.1, 10.0.0.0/8), or loopback, linklocal, uniquelocal, comma-separated; trusting every hop would let any client pick the address it is counted under',
          ),
      ),
    ),
});

function list(v: string, lower = true): string[] {
  return v
    .split(',')
    .map((x) => (lower ? x.trim().toLowerCase() : x.trim()))
    .filter(Boolean);
}

/** An address or range `proxy-addr` (Fastify's `trustProxy`) takes: an IP, an IP with a prefix length, or one of its named ranges. */
function isProxyAddress(entry: string): boolean {
  if (['loopback', 'linklocal', 'uniquelocal'].includes(entry)) return true;
  const [ip = '', bits, ...rest] = entry.split('/');
  const family = isIP(ip);
  if (!family || rest.length) return false;
  if (bits === undefined) return true;
  return /^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128);
}

/** The operator listener's sign-in and sessions, as `registerOperatorAuth` takes them. */
export interface OperatorAuthConfig {
  operators: Record<string, string>;
  sessionKey?: Buffer;
  sessionTtlS: number;
  hostnames?: string[];
  tls?: boolean;
  /** The proxies trusted to say which client a request is from (Fastify's `trustProxy`); absent: none. */
  trustProxy?: string[];
}

/** The {@link OperatorAuthConfig} from the parsed environment. */
export function operatorAuthConfig(e: z.infer<typeof OperatorEnv>): OperatorAuthConfig {
  return {
    operators: parseOperators(e.WAKEGATE_OPERATORS),
    ...(e.WAKEGATE_OPERATOR_SESSION_KEY ? { sessionKey: Buffer.from(e.WAKEGATE_OPERATOR_SESSION_KEY, 'hex') } : {}),
    sessionTtlS: e.WAKEGATE_OPERATOR_SESSION_TTL_S,
    hostnames: e.WAKEGATE_OPERATOR_HOSTNAMES,
    tls: e.WAKEGATE_OPERATOR_TLS,
    ...(e.WAKEGATE_OPERATOR_TRUST_PROXY.length ? { trustProxy: e.WAKEGATE_OPERATOR_TRUST_PROXY } : {}),
  };
}

/**
 * `WAKEGATE_OPERATORS`: `name:secret` pairs, comma-separated. A bad entry fails at start naming the
 * entry's position and what is wrong, never the secret.
 */
export function parseOperators(spec: string): Record<string, string> {
  const out: Record<string, string> = {};
  const entries = spec
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
  for (const [i, entry] of entries.entries()) {
    const at = entry.indexOf(':');
    const name = at > 0 ? entry.slice(0, at) : '';
    const secret = at > 0 ? entry.slice(at + 1) : '';
    const where = `WAKEGATE_OPERATORS entry ${i + 1}`;
    if (!/^[A-Za-z0-9._@-]{1,100}$/.test(name)) throw new ConfigError(`${where}: write name:secret, the name in letters, digits, ".", "_", "@" or "-"`);
    if (secret.length < 16) throw new ConfigError(`${where} (${name}): the secret must be at least 16 characters`);
    if (out[name] !== undefined) throw new ConfigError(`${where}: operator "${name}" is named twice`);
    out[name] = secret;
  }
  return out;
}
