import { randomUUID } from 'node:crypto';
import { Client, Connection, WorkflowNotFoundError, WorkflowUpdateFailedError, type ConnectionOptions } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { FailureType, isInFlightRefusal } from '../core/failures';
import type { LeaseAnswer, LeaseRequest } from '../core/permit-types';
import { leaseUpdate, unusedPermitsSignal } from '../core/supervisor-messages';
import { untraced } from '../tracing/spans';
import type { Unused } from './permit-stock';
import { updateWithin } from './retry';

/** How long one block of permit requests may take, retries included (under the first step's 10 s timeout). */
export const LEASE_DEADLINE_MS = 8_000;
/** How long a return of unused permits may take; one not delivered leaves them counted (conservative). */
const RETURN_DEADLINE_MS = 5_000;

/** The counts of a link's leases (permit-leaser.ts's LeaseStats) that its calls to the supervisor make. */
export type CallCount = 'leaseUpdates' | 'inFlightRefusals' | 'leaseRetries' | 'returned';

/**
 * The permit leaser's calls to its supervisor (permit-leaser.ts decides what to ask for and when):
 * a `lease` update, tried again with a jittered backoff within LEASE_DEADLINE_MS on a connection of
 * its own (see leaseClientOf), under one update ID (a try the server did take is answered with its
 * first outcome, not counted twice); and the `unusedPermits` signal that hands a block back, one at
 * a time, in order.
 */
export class PermitCalls {
  private returning: Promise<void> = Promise.resolve();
  private leaseClient?: { client: Client; close: () => Promise<void> };

  constructor(
    private readonly opts: {
      client: Client;
      workflowId: string;
      /** The leaser's name as a holder of permits. */
      holder: string;
      /** Start the supervisor (a lease found none). */
      ensure: () => Promise<void>;
      count: (what: CallCount, n?: number) => void;
    },
  ) {}

  /** One lease, tried again with a jittered backoff while its failure may pass, within LEASE_DEADLINE_MS. */
  async lease(req: LeaseRequest): Promise<LeaseAnswer> {
    const { count } = this.opts;
    const deadlineMs = Date.now() + LEASE_DEADLINE_MS;
    const updateId = randomUUID();
    try {
      return await updateWithin(
        deadlineMs,
        () => {
          count('leaseUpdates');
          return this.leaseOnce(req, updateId, deadlineMs);
        },
        (err, retrying) => {
          if (isInFlightRefusal(err)) count('inFlightRefusals');
          if (retrying) count('leaseRetries');
        },
      );
    } catch (err) {
      // The supervisor refused the request itself: a defect, which trying again does not change.
      if (!(err instanceof WorkflowUpdateFailedError)) throw err;
      throw ApplicationFailure.create({
        message: `the supervisor refused the lease: ${(err.cause as Error | undefined)?.message ?? err.message}`,
        type: FailureType.SupervisorRefused,
        nonRetryable: true,
        cause: err,
      });
    }
  }

  /** One `lease` update (bringing the supervisor up first if there is none), bounded by `deadlineMs`. */
  private leaseOnce(req: LeaseRequest, updateId: string, deadlineMs: number): Promise<LeaseAnswer> {
    const { client } = (this.leaseClient ??= leaseClientOf(this.opts.client));
    const handle = client.workflow.getHandle(this.opts.workflowId);
    return client.withDeadline(deadlineMs, async () => {
      try {
        return await handle.executeUpdate(leaseUpdate, { args: [req], updateId });
      } catch (err) {
        if (!(err instanceof WorkflowNotFoundError)) throw err;
        await this.opts.ensure();
        return await handle.executeUpdate(leaseUpdate, { args: [req], updateId });
      }
    });
  }

  /** Send unused permits back in one signal; one that does not arrive leaves them counted until the window slides. */
  handBack(blocks: Unused[]): void {
    if (!blocks.length) return;
    const { client, workflowId, holder, count } = this.opts;
    this.returning = this.returning.then(async () => {
      try {
        await untraced(() =>
          client.withDeadline(Date.now() + RETURN_DEADLINE_MS, () => client.workflow.getHandle(workflowId).signal(unusedPermitsSignal, { holder, blocks })),
        );
        count(
          'returned',
          blocks.reduce((sum, b) => sum + b.n, 0),
        );
      } catch {
        // Conservative: the permits stay counted in the supervisor's windows until they slide out.
      }
    });
  }

  /** Wait (bounded) for the returns to be sent; close the leases' own connection. */
  async close(): Promise<void> {
    await this.returning;
    await this.leaseClient?.close().catch(() => undefined);
    this.leaseClient = undefined;
  }
}

/**
 * The client the leases go by: like `client`, on a connection of its own without the gRPC layer's
 * retry, so that every refusal reaches the link, which counts it and tries again at its own backoff
 * within LEASE_DEADLINE_MS (the gRPC layer backs a refused call off by seconds, past the call's
 * deadline, and its last word is then a timeout). The shared client itself when its connection
 * cannot be copied (an API-key connection, a connection of another kind): refusals are then
 * retried, and hidden, by its gRPC layer.
 */
function leaseClientOf(client: Client): { client: Client; close: () => Promise<void> } {
  const shared = { client, close: () => Promise.resolve() };
  const connection = client.connection;
  if (!(connection instanceof Connection)) return shared;
  try {
    const own = Connection.lazy({ ...(connection.options as ConnectionOptions), interceptors: [] });
    return {
      client: new Client({ connection: own, namespace: client.options.namespace, dataConverter: client.options.dataConverter }),
      close: () => own.close(),
    };
  } catch {
    return shared;
  }
}
