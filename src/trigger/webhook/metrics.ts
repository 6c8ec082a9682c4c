import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/**
 * The ingress's Prometheus metrics, on a registry of its own (one per ingress, so tests can run
 * several), served at `GET /metrics`. Names and labels are documented in docs/OPERATIONS.md.
 */
export class IngressMetrics {
  readonly registry = new Registry();
  /** Every delivery answered 2xx, by the gate's decision (started, in_progress, completed, coalesced, ...). */
  readonly accepted = new Counter({
    name: 'wakegate_ingress_accepted_total',
    help: 'Deliveries durably accepted (2xx), by gate decision',
    labelNames: ['source', 'decision'],
    registers: [this.registry],
  });
  /** Accepted deliveries of an event the gate already had (in_progress, completed). */
  readonly duplicate = new Counter({
    name: 'wakegate_ingress_duplicate_total',
    help: 'Accepted deliveries of an event already admitted',
    labelNames: ['source'],
    registers: [this.registry],
  });
  readonly coalesced = new Counter({
    name: 'wakegate_ingress_coalesced_total',
    help: 'Accepted deliveries folded into a pending wake',
    labelNames: ['source'],
    registers: [this.registry],
  });
  readonly stale = new Counter({
    name: 'wakegate_ingress_stale_total',
    help: 'Deliveries older than the version already seen',
    labelNames: ['source'],
    registers: [this.registry],
  });
  readonly shed = new Counter({
    name: 'wakegate_ingress_shed_total',
    help: 'Requests shed with 429 by the shed policy',
    labelNames: ['source', 'reason', 'policy'],
    registers: [this.registry],
  });
  /** Every other refusal (4xx), by reason: the JSON error.code or the refusing decision. */
  readonly refused = new Counter({
    name: 'wakegate_ingress_refused_total',
    help: 'Requests refused (4xx other than 429), by reason',
    labelNames: ['source', 'reason'],
    registers: [this.registry],
  });
  readonly unavailable = new Counter({
    name: 'wakegate_ingress_unavailable_total',
    help: 'Requests answered 503 (Temporal did not accept in time)',
    labelNames: ['source'],
    registers: [this.registry],
  });
  readonly requestSeconds = new Histogram({
    name: 'wakegate_ingress_request_seconds',
    help: 'Webhook request latency, from arrival to answer, by status',
    labelNames: ['source', 'status'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  readonly gateSeconds = new Histogram({
    name: 'wakegate_ingress_gate_seconds',
    help: 'Time the gate took to answer (Temporal accepted or refused)',
    labelNames: ['source'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  readonly inFlight = new Gauge({ name: 'wakegate_ingress_in_flight', help: 'Webhook requests being worked on now', registers: [this.registry] });
  readonly inFlightLimit = new Gauge({
    name: 'wakegate_ingress_in_flight_limit',
    help: 'Cap on webhook requests in flight in this process',
    registers: [this.registry],
  });

  /**
   * Events a coalescer's dedup table let go before their horizon (its size bound; a redelivery of one
   * runs again), as the coalescers' answers report their totals; by agent.
   */
  readonly forgottenEarly = new Counter({
    name: 'wakegate_coalescer_forgotten_early_total',
    help: "Events a coalescer's dedup table let go before their dedup horizon, by agent",
    labelNames: ['agent'],
    registers: [this.registry],
  });
  /** Each coalescer's last reported total, newest last (bounded: a coalescer not heard from in a while is read afresh). */
  private readonly forgottenBy = new Map<string, number>();

  constructor(opts: { defaultMetrics?: boolean } = {}) {
    if (opts.defaultMetrics) collectDefaultMetrics({ register: this.registry, prefix: 'wakegate_ingress_' });
  }

  /**
   * Count one gate answer by its decision (decisions pass through unchanged, new ones included).
   * Refusals are counted in `refused` by whoever answers them; `stale` is counted here either way.
   */
  countForgotten(wakes: readonly { agent: string; coalescerId?: string; forgottenEarly?: number }[]): void {
    for (const w of wakes) {
      if (!w.coalescerId || !w.forgottenEarly) continue;
      const last = this.forgottenBy.get(w.coalescerId);
      this.forgottenBy.delete(w.coalescerId);
      this.forgottenBy.set(w.coalescerId, Math.max(last ?? 0, w.forgottenEarly));
      // First heard of in this process: its whole total (a restart counts it again, as counters reset).
      if (w.forgottenEarly > (last ?? 0)) this.forgottenEarly.inc({ agent: w.agent }, w.forgottenEarly - (last ?? 0));
      if (this.forgottenBy.size > 10_000) this.forgottenBy.delete(this.forgottenBy.keys().next().value!);
    }
  }

  countDecision(source: string, decision: string, accepted: boolean): void {
    if (decision === 'stale') this.stale.inc({ source });
    if (!accepted) return;
    this.accepted.inc({ source, decision });
    if (decision === 'in_progress' || decision === 'completed') this.duplicate.inc({ source });
    if (decision === 'coalesced') this.coalesced.inc({ source });
  }
}
