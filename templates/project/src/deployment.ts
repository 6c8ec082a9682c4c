import type { WakegateOptions } from 'wakegate';
import { schedules } from './schedules';
import { tickets, ticketsWebhook } from './tickets';
import { triage } from './triage';

/** Everything `createWakegate` composes: the agent, its trigger, the webhook that feeds it, the schedule. */
export function deployment(opts: { labelsFile: string }): WakegateOptions {
  return { agents: [triage(opts.labelsFile)], triggers: [tickets], webhookSources: [ticketsWebhook], schedules };
}
