/**
 * Every `ApplicationFailure` type wakegate raises, in one place: activities throw them, workflows and
 * retry policies name them (`nonRetryableErrorTypes`), tests match them. Pure, so workflows import it.
 */
export const FailureType = {
  /** No agent of that name is defined in this worker (non-retryable). */
  UnknownAgent: 'UnknownAgent',
  /** The agent has no tool of that name (non-retryable). */
  UnknownTool: 'UnknownTool',
  /** A tool was called (as a step, precheck or subagent read) with arguments its schema refuses (non-retryable). */
  InvalidArguments: 'InvalidArguments',
  /** An agent's `decide` threw: a defect in the agent's code (non-retryable). */
  DecideFailed: 'DecideFailed',
  /** An agent's `mergePayload` threw: a defect in the agent's code (non-retryable). */
  MergeFailed: 'MergeFailed',
  /** The supervisor's validator refused a request of this worker's link: a defect, not an outage (non-retryable). */
  SupervisorRefused: 'SupervisorRefused',
  /** The agent has no effect of that name (non-retryable). */
  UnknownEffect: 'UnknownEffect',
  /** A provider refused the request with a 4xx other than 408/429: a retry cannot fix it (non-retryable). */
  ProviderRejected: 'ProviderRejected',
  /** A provider's 429: retryable, with the provider's `Retry-After` as the next delay. */
  RateLimited: 'RateLimited',
  /** A retry of a reconcile effect cannot tell whether the earlier attempt landed: the run escalates (non-retryable). */
  EffectAmbiguous: 'EffectAmbiguous',
  /** A schedule window's event key was used with other inputs (non-retryable). */
  ScheduleWindowMismatch: 'ScheduleWindowMismatch',
  /** A schedule window's wake failed, so the tick fails and `pauseOnFailure` can act (non-retryable). */
  ScheduledWakeFailed: 'ScheduledWakeFailed',
  /**
   * An effect of an execution reset past its first step (a Web UI reset to a later workflow task):
   * its slots' keys were read for the execution it was reset from, not across every execution, so
   * it carries out nothing; nothing was begun under the key (non-retryable). A redelivery or a
   * replay starts the run again on keys read across every execution; so does a reset to the first
   * workflow task.
   */
  ResetPastStart: 'ResetPastStart',
  /** A wake run failed on a defect (terminal reason `failed`; non-retryable). */
  RunFailed: 'RunFailed',
} as const;

/** One of the {@link FailureType} names. */
export type FailureType = (typeof FailureType)[keyof typeof FailureType];

/** An error's messages and details, and its causes' (at most five deep), as one string. */
export function errorChainText(err: unknown): string {
  let text = '';
  for (let e = err as { message?: unknown; details?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 5; e = e.cause as typeof e, depth++) {
    if (typeof e !== 'object') return `${text} ${String(e)}`;
    text += ` ${String(e.message ?? '')} ${String(e.details ?? '')}`;
  }
  return text;
}

/**
 * Temporal refused an update before any workflow saw it: the workflow already had as many in flight
 * as it admits (10, RESOURCE_EXHAUSTED). The gate's offers and the permit leases both meet it.
 */
export function isInFlightRefusal(err: unknown): boolean {
  return /in-flight updates/i.test(errorChainText(err));
}
