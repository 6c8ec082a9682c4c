import { Counter, Gauge, type Registry } from 'prom-client';

/** The queue trigger's metrics, on the ingress's registry (served at `GET /metrics`). */
export class QueueMetrics {
  readonly accepted: Counter<'source' | 'decision'>;
  readonly deadLettered: Counter<'source' | 'reason'>;
  readonly retried: Counter<'source'>;
  readonly reclaimed: Counter<'source'>;
  /** Messages delivered to a consumer and not yet acknowledged. */
  readonly pending: Gauge<'source'>;
  /** Messages in the stream not yet delivered to any consumer: the backlog to watch. */
  readonly lag: Gauge<'source'>;

  constructor(registry: Registry) {
    const registers = [registry];
    this.accepted = new Counter({
      name: 'wakegate_queue_accepted_total',
      help: 'Queue messages the gate accepted, then acknowledged',
      labelNames: ['source', 'decision'],
      registers,
    });
    this.deadLettered = new Counter({
      name: 'wakegate_queue_dead_lettered_total',
      help: 'Queue messages moved to the dead-letter stream, by reason',
      labelNames: ['source', 'reason'],
      registers,
    });
    this.retried = new Counter({
      name: 'wakegate_queue_retried_total',
      help: 'Queue messages left for redelivery (Temporal did not accept)',
      labelNames: ['source'],
      registers,
    });
    this.reclaimed = new Counter({
      name: 'wakegate_queue_reclaimed_total',
      help: 'Queue messages reclaimed from an idle consumer (XAUTOCLAIM)',
      labelNames: ['source'],
      registers,
    });
    this.pending = new Gauge({ name: 'wakegate_queue_pending', help: 'Delivered, not yet acknowledged', labelNames: ['source'], registers });
    this.lag = new Gauge({ name: 'wakegate_queue_lag', help: 'In the stream, not yet delivered to the group', labelNames: ['source'], registers });
  }
}
