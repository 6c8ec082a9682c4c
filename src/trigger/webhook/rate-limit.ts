/**
 * The named shed policy of the ingress. `reject-newest`: when a source is over its rate or the
 * process is at its in-flight cap, the arriving request is refused at once with 429 and a
 * Retry-After; nothing is queued in the ingress, so there is no buffer to grow between the socket
 * and Temporal. The sender keeps the event and retries (webhook senders do, with backoff).
 */
export const SHED_POLICY = 'reject-newest';

/** Why a request was shed. */
export type ShedReason = 'rate_limit' | 'in_flight';

/**
 * A token bucket: `ratePerSecond` sustained, `burst` at once. `take()` answers 0 when a token was
 * taken, else the seconds until one will be there (for Retry-After). Time from `now()` (ms).
 */
export class TokenBucket {
  private tokens: number;
  private last: number;

  constructor(
    private readonly ratePerSecond: number,
    private readonly burst: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.tokens = burst;
    this.last = now();
  }

  take(): number {
    const t = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((t - this.last) / 1000) * this.ratePerSecond);
    this.last = t;
    if (this.tokens >= 1) {
      this.tokens -= 1;
      return 0;
    }
    return (1 - this.tokens) / this.ratePerSecond;
  }
}

/** A cap on requests in flight in this process; `enter()` refuses past it (no waiting line). */
export class InFlightCap {
  private count = 0;
  constructor(readonly limit: number) {}

  get inFlight(): number {
    return this.count;
  }

  enter(): boolean {
    if (this.count >= this.limit) return false;
    this.count++;
    return true;
  }

  leave(): void {
    this.count = Math.max(0, this.count - 1);
  }
}

/** Retry-After in whole seconds (at least 1), as HTTP wants it. */
export const retryAfterSeconds = (seconds: number): string => String(Math.max(1, Math.ceil(seconds)));
