import type * as Api from '@opentelemetry/api';
import type { Context as ActivityContext } from '@temporalio/activity';
import type { ActivityExecuteInput, ActivityInboundCallsInterceptor, Next } from '@temporalio/worker';
import { WakeAttr } from '../core/trace-context';

type Attrs = Record<string, string | number>;
const obj = (v: unknown): Record<string, unknown> => (v && typeof v === 'object' ? (v as Record<string, unknown>) : {});

function put(out: Attrs, key: string, value: unknown): void {
  if ((typeof value === 'string' && value !== '') || typeof value === 'number') out[key] = value;
}

/**
 * What an activity's input says of the wake, by activity: the model turn (`modelTurn`), the tool
 * call (`toolCall`, `wakegate.tool`), the effect (`commitEffect`: its key and class), the offer to
 * the coalescer, the run's first step, a scheduled window.
 */
export function activityInputAttributes(activityType: string, input: unknown): Attrs {
  const a = obj(input);
  const out: Attrs = {};
  put(out, WakeAttr.agent, a.agent);
  put(out, WakeAttr.agentVersion, a.agentVersion);
  switch (activityType) {
    case 'modelTurn': {
      const run = obj(a.run);
      put(out, WakeAttr.runKey, run.runKey);
      put(out, WakeAttr.wakeKey, run.wakeKey);
      out['gen_ai.operation.name'] = 'chat';
      put(out, 'gen_ai.request.max_tokens', a.maxOutputTokens);
      break;
    }
    case 'toolCall':
      put(out, WakeAttr.tool, a.tool);
      put(out, WakeAttr.runKey, a.runKey);
      put(out, WakeAttr.wakeKey, a.wakeKey);
      break;
    case 'commitEffect': {
      const effect = obj(a.effect);
      const run = obj(a.run);
      put(out, WakeAttr.effectKey, a.effectKey);
      put(out, WakeAttr.effect, effect.name);
      put(out, WakeAttr.effectClass, effect.class);
      put(out, WakeAttr.runKey, run.runKey);
      put(out, WakeAttr.wakeKey, run.wakeKey);
      put(out, WakeAttr.eventKey, run.eventKey);
      break;
    }
    case 'steerRun':
      put(out, WakeAttr.coalescerId, a.coalescerId);
      put(out, WakeAttr.runKey, a.runKey);
      break;
    case 'runScheduledWindow':
      put(out, WakeAttr.scheduleId, a.scheduleId);
      put(out, WakeAttr.deliveryId, a.deliveryId);
      break;
  }
  return out;
}

/** What an activity's result says: the model and its token use, the effect's outcome, a window's decision. */
export function activityResultAttributes(activityType: string, result: unknown): Attrs {
  const r = obj(result);
  const out: Attrs = {};
  switch (activityType) {
    case 'modelTurn': {
      const usage = obj(r.usage);
      put(out, 'gen_ai.response.model', r.model);
      put(out, 'gen_ai.usage.input_tokens', usage.inputTokens);
      put(out, 'gen_ai.usage.output_tokens', usage.outputTokens);
      if (Array.isArray(r.toolCalls)) out['wakegate.model.tool_calls'] = r.toolCalls.length;
      break;
    }
    case 'commitEffect':
      put(out, WakeAttr.outcome, r.outcome);
      break;
    case 'prepareRun':
      // The version the run is pinned to from this step on.
      put(out, WakeAttr.agentVersion, obj(r.policy).version);
      break;
    case 'runScheduledWindow':
      put(out, WakeAttr.decision, r.decision);
      put(out, WakeAttr.terminalReason, r.terminalReason);
      break;
  }
  return out;
}

/**
 * Sets wakegate's attributes on the activity's span (`RunActivity:<type>`, made by the OpenTelemetry
 * interceptor just outside this one): its keys from the input before the activity runs, what came of
 * it after. The activity's own code knows nothing of tracing.
 */
export class WakeActivityInterceptor implements ActivityInboundCallsInterceptor {
  constructor(
    private readonly ctx: ActivityContext,
    private readonly api: typeof Api,
  ) {}

  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    const span = this.api.trace.getActiveSpan();
    if (!span) return next(input);
    const type = this.ctx.info.activityType;
    span.setAttributes({ ...activityInputAttributes(type, input.args[0]), [WakeAttr.attempt]: this.ctx.info.attempt });
    const result = await next(input);
    span.setAttributes(activityResultAttributes(type, result));
    return result;
  }
}
