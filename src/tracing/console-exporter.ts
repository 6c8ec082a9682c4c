import type { ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';

const ms = ([s, ns]: [number, number]) => s * 1000 + ns / 1e6;

/**
 * `OTEL_TRACES_EXPORTER=console`: one JSON line per span on stderr, so a trace can be read without a
 * collector and stdout stays the CLI's one JSON answer.
 */
export class StderrSpanExporter implements SpanExporter {
  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    for (const s of spans) {
      const { traceId, spanId } = s.spanContext();
      const line = {
        traceId,
        spanId,
        parentSpanId: s.parentSpanId,
        name: s.name,
        kind: s.kind,
        startTime: new Date(ms(s.startTime)).toISOString(),
        durationMs: Math.round(ms(s.duration) * 1000) / 1000,
        status: s.status,
        attributes: s.attributes,
        links: s.links.map((l) => ({ traceId: l.context.traceId, spanId: l.context.spanId })),
      };
      process.stderr.write(`${JSON.stringify(line)}\n`);
    }
    done({ code: 0 });
  }

  async shutdown(): Promise<void> {}
}
