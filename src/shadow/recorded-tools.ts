import type { Client } from '@temporalio/client';
import type { History } from '@temporalio/common/lib/proto-utils';
import type { ToolInput, ToolResult } from '../core/contracts';
import type { RecordedToolCall } from '../core/recorded-tools';
import { first } from '../trail/history-read';

/**
 * JSON characters of recorded answers one shadow run carries (in its input, and its subagents' in
 * theirs): with a batch's events (BATCH_BUDGET_CHARS) it stays well under the 2 MB Temporal takes in
 * one payload. Calls past it are not recorded: the shadow makes them live.
 */
export const RECORDED_TOOLS_BUDGET_CHARS = 500_000;

/**
 * Every tool call a recorded run made and the answer it got, in the order they were made: its own
 * `toolCall` activities that completed, then its subagents' (child workflows, read from their own
 * histories). A call that failed has no answer to give and is left out (a shadow run makes it live).
 */
export async function recordedToolCalls(client: Client, history: History): Promise<RecordedToolCall[]> {
  const all = await everyToolCall(client, history);
  let chars = 0;
  return all.filter((c) => (chars += JSON.stringify(c).length) <= RECORDED_TOOLS_BUDGET_CHARS);
}

async function everyToolCall(client: Client, history: History): Promise<RecordedToolCall[]> {
  const scheduled = new Map<string, ToolInput>();
  const calls: RecordedToolCall[] = [];
  const children: { workflowId: string; runId: string }[] = [];
  for (const e of history.events ?? []) {
    const a = e.activityTaskScheduledEventAttributes;
    if (a && a.activityType?.name === 'toolCall') scheduled.set(String(e.eventId), (await first(client, a.input)) as ToolInput);
    const done = e.activityTaskCompletedEventAttributes;
    const input = done ? scheduled.get(String(done.scheduledEventId)) : undefined;
    if (done && input) {
      const { content, changed, nothingToDo } = (await first(client, done.result)) as ToolResult;
      calls.push({
        tool: input.tool,
        ...(input.item !== undefined ? { item: input.item } : {}),
        args: input.args,
        result: { content, changed, ...(nothingToDo !== undefined ? { nothingToDo } : {}) },
      });
    }
    const child = e.childWorkflowExecutionStartedEventAttributes?.workflowExecution;
    if (child?.workflowId && child.runId) children.push({ workflowId: child.workflowId, runId: child.runId });
  }
  for (const c of children) calls.push(...(await everyToolCall(client, await client.workflow.getHandle(c.workflowId, c.runId).fetchHistory())));
  return calls;
}
