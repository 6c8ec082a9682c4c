import { loadConfig } from '../config/config';
import { SHADOW_PREFIX } from '../core/ids';
import { connectClient } from '../config/temporal';
import { TERMINAL_REASONS } from '../core/run-types';
import {
  WakeAbsorbedEventKeys,
  WakeAgent,
  WakeKey,
  WakeAttempts,
  WakeCostUsd,
  WakeDeliveryCount,
  WakeDeliveryIds,
  WakeEventKey,
  WakeTerminalReason,
  WakeTokens,
} from '../core/search-attributes';
import { ExitCode, printJson, UsageError } from './output';

/** The options of `wakegate runs`, as commander parses them. */
export interface RunsOptions {
  reason?: string;
  agent?: string;
  wakeKey?: string;
  limit: string;
}

/** `wakegate runs [--reason R] [--agent A] [--wake-key K] [--limit N]`: recent runs with their search attributes, newest first. */
export async function listRuns(opts: RunsOptions): Promise<number> {
  if (opts.reason && !(TERMINAL_REASONS as readonly string[]).includes(opts.reason)) {
    throw new UsageError(`--reason must be one of ${TERMINAL_REASONS.join(', ')}`);
  }
  const limit = Number(opts.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw new UsageError('--limit must be a whole number from 1 to 1000');
  // A held run that continued as new is listed once, as its current run.
  const clauses = ['WorkflowType = "runWorkflow"', 'ExecutionStatus != "ContinuedAsNew"'];
  if (opts.reason) clauses.push(`WakeTerminalReason = "${opts.reason}"`);
  if (opts.agent) clauses.push(`WakeAgent = "${opts.agent.replace(/"/g, '')}"`);
  if (opts.wakeKey) clauses.push(`WakeKey = "${opts.wakeKey.replace(/"/g, '')}"`);
  const client = await connectClient(loadConfig());
  try {
    const runs = [];
    for await (const w of client.workflow.list({ query: clauses.join(' AND '), pageSize: Math.min(limit, 100) })) {
      const sa = w.typedSearchAttributes;
      // A `wakegate shadow` session's run indexes nothing: it is no run of the deployment's (a live shadow lists as `<agent>/shadow`).
      if (w.workflowId.startsWith(SHADOW_PREFIX) && sa.get(WakeAgent) === undefined) continue;
      runs.push({
        workflowId: w.workflowId,
        runId: w.runId,
        status: w.status.name,
        eventKey: sa.get(WakeEventKey),
        agent: sa.get(WakeAgent),
        wakeKey: sa.get(WakeKey) ?? null,
        // A coalesced run: the events it absorbed (the first 20; all of them, and those it skipped, in its result).
        absorbedEventKeys: sa.get(WakeAbsorbedEventKeys) ?? [],
        terminalReason: sa.get(WakeTerminalReason) ?? null,
        attempts: sa.get(WakeAttempts) ?? null,
        tokens: sa.get(WakeTokens) ?? null,
        costUsd: sa.get(WakeCostUsd) ?? null,
        deliveryIds: sa.get(WakeDeliveryIds) ?? [],
        deliveryCount: sa.get(WakeDeliveryCount) ?? null,
        startTime: w.startTime.toISOString(),
        closeTime: w.closeTime?.toISOString() ?? null,
      });
      if (runs.length >= limit) break;
    }
    printJson({ query: clauses.join(' AND '), runs });
    return ExitCode.ok;
  } finally {
    await client.connection.close();
  }
}
