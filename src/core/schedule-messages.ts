import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { FixedDelayState, LedgerState, TickReport } from './schedule-types';

/** A tick's decision, sent to its schedule's ledger (fire and forget, via signal-with-start). */
export const tickReportSignal = defineSignal<[TickReport]>('tickReport');

/** The ledger's durable gap records. */
export const gapsQuery = defineQuery<LedgerState>('gaps');

/** The fixed-delay loop's cadence: runs, last period, drift. */
export const cadenceQuery = defineQuery<FixedDelayState & { delayMs: number; phase: string }>('cadence');

/** Workflow ID of a schedule's ledger. */
export function ledgerWorkflowId(scheduleId: string): string {
  return `wakegate-ledger/${scheduleId}`;
}

/** Workflow ID prefix of a schedule's ticks; Temporal appends `-<nominal RFC3339>`. */
export function tickWorkflowId(scheduleId: string): string {
  return `wakegate-tick/${scheduleId}`;
}

/** Workflow ID of a fixed-delay schedule's loop. */
export function fixedDelayWorkflowId(scheduleId: string): string {
  return `wakegate-delay/${scheduleId}`;
}
