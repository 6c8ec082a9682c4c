import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * What a signed-in session's cookie carries (sealed by `@fastify/secure-session`, so the browser
 * can neither read nor change it): the operator, a session ID, a fingerprint of the operator's
 * secret at sign-in, and when the sign-in was (ms since the epoch).
 */
export interface SessionClaims {
  name: string;
  sid: string;
  fp: string;
  iat: number;
}

/** Signed-out sessions remembered at most, per process, before the bound ends every older session instead. */
export const MAX_REVOKED_SESSIONS = 10_000;

/**
 * When an operator's session ends, though its cookie is stateless: a TTL after the sign-in however
 * active it was (`ttlS`); as soon as the operator's secret is no longer the one it was opened with
 * (the fingerprint is an HMAC of name and secret under the sealing key: a process started with a
 * rotated secret, or without the operator, refuses it); and on sign-out, its ID kept as revoked
 * until its TTL is over. The revoked IDs live in this process only, at most `maxRevoked` of them:
 * past the bound, every session signed in until then ends (a sign-out is never forgotten). Other
 * processes sharing the session key, and this one after a restart, do not know of a sign-out: a
 * copied cookie works there until its TTL or a change of the operator's secret.
 */
export class OperatorSessions {
  private readonly fingerprints = new Map<string, Buffer>();
  private readonly revoked = new Map<string, number>();
  /** Sessions signed in before this moment are over (the revoked set overflowed), ms. */
  private notBeforeMs = 0;

  constructor(
    operators: Readonly<Record<string, string>>,
    sealingKey: Buffer,
    private readonly ttlS: number,
    private readonly maxRevoked = MAX_REVOKED_SESSIONS,
  ) {
    for (const [name, secret] of Object.entries(operators)) this.fingerprints.set(name, fingerprint(sealingKey, name, secret));
  }

  /** The claims of a fresh sign-in of `name` (a configured operator). */
  open(name: string): SessionClaims {
    const fp = this.fingerprints.get(name);
    if (!fp) throw new Error(`no operator ${name}`);
    return { name, sid: randomBytes(16).toString('base64url'), fp: fp.toString('base64url'), iat: Date.now() };
  }

  /** The operator these claims act as, or undefined once the session is over (or they are not claims of this listener). */
  operatorOf(claims: unknown): string | undefined {
    if (!isClaims(claims)) return undefined;
    const fp = this.fingerprints.get(claims.name);
    const given = Buffer.from(claims.fp, 'base64url');
    if (!fp || given.length !== fp.length || !timingSafeEqual(given, fp)) return undefined;
    const now = Date.now();
    if (claims.iat < this.notBeforeMs || claims.iat > now + 60_000 || now >= this.endsAtMs(claims)) return undefined;
    return this.revoked.has(claims.sid) ? undefined : claims.name;
  }

  /** Sign-out: these claims open nothing in this process any more. */
  end(claims: unknown): void {
    if (!isClaims(claims)) return;
    const now = Date.now();
    for (const [sid, endsAt] of this.revoked) if (endsAt <= now) this.revoked.delete(sid);
    if (this.revoked.size >= this.maxRevoked) {
      // Forgetting one revocation would open its cookie again: end every session signed in so far instead.
      this.notBeforeMs = now + 1;
      this.revoked.clear();
      return;
    }
    this.revoked.set(claims.sid, this.endsAtMs(claims));
  }

  /** Signed-out sessions remembered now. */
  get revokedCount(): number {
    return this.revoked.size;
  }

  private endsAtMs(claims: SessionClaims): number {
    return claims.iat + this.ttlS * 1000;
  }
}

function fingerprint(key: Buffer, name: string, secret: string): Buffer {
  return createHmac('sha256', key).update('wakegate operator session\0').update(name).update('\0').update(secret).digest().subarray(0, 16);
}

function isClaims(v: unknown): v is SessionClaims {
  const c = v as Partial<SessionClaims> | null | undefined;
  return (
    typeof c === 'object' && c !== null && typeof c.name === 'string' && typeof c.sid === 'string' && typeof c.fp === 'string' && typeof c.iat === 'number'
  );
}
