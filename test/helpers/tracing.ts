/**
 * Whether this process records spans: whether `startTracing` (src/tracing/provider.ts) has set the
 * active tracer that src/tracing/spans.ts keeps on the process under this symbol.
 */
export function tracingOn(): boolean {
  return Reflect.get(globalThis, Symbol.for('wakegate.tracing.active')) !== undefined;
}
