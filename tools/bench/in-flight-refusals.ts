import { InterceptingCall, type Interceptor } from '@grpc/grpc-js';
import { defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';
import type { Logger, LogLevel, LogMetadata } from '@temporalio/worker';
import { errorChainText } from '../../src/core/failures';
import { processLeaseStats } from '../../src/supervisor/link';

/** What Temporal says when a workflow already has as many updates in flight as it admits (10). */
export const IN_FLIGHT_LIMIT = 'limit on number of concurrent in-flight updates';

/**
 * The name of the process-wide counter a product module may export: a function returning how many
 * updates this process had refused with the in-flight limit. Looked for in the two modules that send
 * the hot updates (offers to a coalescer, permit leases to the supervisor).
 */
export const COUNTER_EXPORT = 'inFlightUpdateRefusals';
const COUNTER_MODULES = ['../gate/offer-queue', '../supervisor/link'];

const mentions = (text: unknown) => typeof text === 'string' && text.includes(IN_FLIGHT_LIMIT);

/**
 * Updates the server refused with its in-flight limit, counted from what a benchmark process can see:
 * - with a process-wide counter exported as `inFlightUpdateRefusals()` from src/coalescer/offer-queue.ts or
 *   src/supervisor/link.ts (summed over both): that counter alone, since it sees every refusal sent from
 *   this process, the gate's and the worker's;
 * - otherwise, the sum of two disjoint sources: every gRPC answer to the benchmark's own client (the
 *   gate's) that carries the limit's message, retried ones included (the counting interceptor sits
 *   inside the client's retry interceptor), and every worker log line (an activity attempt failed,
 *   such as a run's first step failing on its permit) whose error names the limit.
 * Errors that reached the benchmark's callers are noted too, as a check: the gRPC count includes them.
 */
export class InFlightRefusals {
  private grpcAnswers = 0;
  private workerLogLines = 0;
  private callerErrors = 0;

  /** The interceptors for the benchmark's client `Connection`: Temporal's retry, then this count. */
  interceptors(): Interceptor[] {
    const counting: Interceptor = (options, nextCall) =>
      new InterceptingCall(nextCall(options), {
        start: (metadata, listener, next) =>
          next(metadata, {
            onReceiveStatus: (status, nextStatus) => {
              if (mentions(status.details)) this.grpcAnswers++;
              nextStatus(status);
            },
          }),
      });
    return [makeGrpcRetryInterceptor(defaultGrpcRetryOptions()), counting];
  }

  /** The runtime's logger, counting each line whose error names the limit before passing it on. */
  logger(inner: Logger): Logger {
    const seen = (message: string, meta?: LogMetadata) => {
      if (mentions(message) || mentions(errorChainText(meta?.error))) this.workerLogLines++;
    };
    const at =
      (level: LogLevel) =>
      (message: string, meta?: LogMetadata): void => {
        seen(message, meta);
        inner.log(level, message, meta);
      };
    return {
      log: (level: LogLevel, message: string, meta?: LogMetadata) => at(level)(message, meta),
      trace: at('TRACE'),
      debug: at('DEBUG'),
      info: at('INFO'),
      warn: at('WARN'),
      error: at('ERROR'),
    };
  }

  /** An error a caller of the gate saw. */
  noteError(message: string): void {
    if (mentions(message)) this.callerErrors++;
  }

  /** The product's own counter, summed over the modules that export one; undefined when none does. */
  processCounter(): number | undefined {
    let total: number | undefined;
    for (const m of COUNTER_MODULES) {
      let mod: Record<string, unknown>;
      try {
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        mod = require(m) as Record<string, unknown>;
      } catch {
        continue; // moved or gone: the other sources still count
      }
      const counter = mod[COUNTER_EXPORT];
      if (typeof counter === 'function') total = (total ?? 0) + Number((counter as () => number)());
    }
    return total;
  }

  /** Refusals the permit leases of this process's supervisor links saw on their own connections (src/supervisor/permit-leaser.ts). */
  leaseRefusals(): number {
    return processLeaseStats().inFlightRefusals;
  }

  total(): number {
    return this.processCounter() ?? this.grpcAnswers + this.workerLogLines + this.leaseRefusals();
  }

  /** Each source's count, and which of them `total` is. */
  sources() {
    const counter = this.processCounter();
    return {
      counted: counter === undefined ? 'gRPC answers to the gate + worker log lines + lease refusals' : `${COUNTER_EXPORT}() of the product`,
      processCounter: counter ?? null,
      grpcAnswersToTheGate: this.grpcAnswers,
      leaseRefusals: this.leaseRefusals(),
      workerLogLines: this.workerLogLines,
      errorsSeenByCallers: this.callerErrors,
    };
  }
}
