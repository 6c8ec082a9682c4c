import { activityInfo, log } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { AgentPolicy } from '../agents/policy';
import type { OutsideConfig } from '../config/config';
import { withHeartbeat } from './heartbeat';
import { http } from './http';
import type { Model, ModelReply, ModelRequest } from './model/types';

/** What a tool hands back to the run: JSON the model reads. `nothingToDo` ends a precheck `no_op`. */
export interface ToolResult {
  content: string;
  changed: boolean;
  nothingToDo?: boolean;
}

export interface ToolInput {
  tool: string;
  eventKey: string;
  entity: string;
  payload: Record<string, unknown>;
  /** For subagents: the item they work on (one dashboard). */
  item?: string;
}

/** The run's activities: the agent's policy, the model, the tools. */
export function createRunActivities(opts: { agents: Readonly<Record<string, AgentPolicy>>; model: Model; outside: OutsideConfig }) {
  const { agents, model, outside } = opts;
  return {
    /** The named agent's policy (plain JSON), so the workflow gets policy through history. Unknown agent → non-retryable. */
    async loadAgentPolicy(name: string): Promise<AgentPolicy> {
      const p = agents[name];
      if (!p) throw ApplicationFailure.nonRetryable(`no agent named "${name}" is defined in this worker`, 'UnknownAgent');
      return p;
    },

    /** One model turn. Heartbeats while it waits, so a kill cancels it mid-call. Returns the reply with honest usage. */
    async modelCall(req: ModelRequest): Promise<ModelReply & { attempt: number }> {
      const reply = await withHeartbeat((signal) => model.complete(req, signal));
      const { attempt } = activityInfo();
      log.info('model call', { model: reply.model, attempt, ...reply.usage, toolCalls: reply.toolCalls.length });
      return { ...reply, attempt };
    },

    /** One tool call: reads only, never an effect. */
    async toolCall(input: ToolInput): Promise<ToolResult & { attempt: number }> {
      const { attempt } = activityInfo();
      const result = await withHeartbeat(async (signal): Promise<ToolResult> => {
        switch (input.tool) {
          case 'read_dashboard': {
            const name = input.item ?? 'overview';
            const res = await http({
              method: 'GET',
              url: `${outside.dashboardUrl}/campaigns/${encodeURIComponent(input.entity)}/dashboards/${encodeURIComponent(name)}`,
              timeoutMs: outside.httpTimeoutMs,
              signal,
            });
            const d = res.json as { changed: boolean; metrics: Record<string, number> };
            const headline = `${name}: ${Object.entries(d.metrics).map(([k, v]) => `${k} ${v}`).join(', ')}`;
            return { content: JSON.stringify({ dashboard: name, changed: d.changed, headline, metrics: d.metrics }), changed: d.changed };
          }
          case 'check_dependency': {
            const { package: pkg, from, to } = input.payload as { package: string; from: string; to: string };
            const changed = from !== to;
            return {
              content: JSON.stringify({ changed, headline: changed ? `bump ${pkg} from ${from} to ${to}` : `${pkg} is already at ${to}` }),
              changed,
              nothingToDo: !changed,
            };
          }
          default:
            throw ApplicationFailure.nonRetryable(`no tool named "${input.tool}"`, 'UnknownTool');
        }
      });
      return { ...result, attempt };
    },
  };
}
