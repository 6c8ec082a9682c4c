import type { Client } from '@temporalio/client';
import type { NativeConnection, Worker } from '@temporalio/worker';
import { canary } from '../agents/canary';
import type { AgentDefinition } from '../agents/types';
import type { AgentRegistry } from '../agents/registry';
import type { Activities } from '../../activities';
import type { ModelTurn } from '../core/model';
import { loadConfig, type Config, type OutsideConfig } from '../config/config';
import type { Gate, GateOptions } from '../gate/gate';
import type { WebhookSource } from '../trigger/webhook/source';
import type { ScheduleDefinition } from '../../schedules/definition';
import { builtinSchedules } from '../../schedules/definitions';
import type { SupervisorLink } from '../supervisor/link';
import type { Pager } from '../supervisor/pager';
import { assertSupervisorPolicy, defaultSupervisorPolicy } from '../supervisor/policy';
import type { TriggerDefinition } from '../trigger/definition';
import { pingTrigger } from '../trigger/ping';
import { TriggerRegistry } from '../gate/trigger-registry';
import { scheduleTrigger } from '../trigger/schedule';
import type { SupervisorPolicy } from '../core/supervisor-types';
import type { WakeAnswer } from '../core/decision';
import type { RunResult } from '../core/run-types';
import type { WakeWorkerOptions } from './worker';
import type * as ActivitiesModule from '../../activities';
import type * as GateModule from '../gate/gate';
import type * as AwaitRunModule from '../run/await-run';
import { assertOneTemporalVersion } from './versions';
import type * as LinkModule from '../supervisor/link';
import type * as TemporalModule from '../config/temporal';
import type * as WorkerModule from './worker';
import type * as NativeModule from '@temporalio/worker';
import type * as TracingModule from '../tracing/provider';
import type * as PluginModule from './plugin';

/*
 * Composing is cheap: the Temporal client, the worker and the activities are loaded when first used,
 * so a process that only keys events (the CLI refusing bad input) never loads them.
 */
/* eslint-disable @typescript-eslint/no-require-imports */
const lazy = {
  activities: () => require('../../activities') as typeof ActivitiesModule,
  gate: () => require('../gate/gate') as typeof GateModule,
  awaitRun: () => require('../run/await-run') as typeof AwaitRunModule,
  link: () => require('../supervisor/link') as typeof LinkModule,
  temporal: () => require('../config/temporal') as typeof TemporalModule,
  worker: () => require('./worker') as typeof WorkerModule,
  native: () => require('@temporalio/worker') as typeof NativeModule,
  tracing: () => require('../tracing/provider') as typeof TracingModule,
  plugin: () => require('./plugin') as typeof PluginModule,
};
/* eslint-enable @typescript-eslint/no-require-imports */

/** What `createWakegate` takes: your agents and how they are woken. Everything but `agents` has a default. */
export interface WakegateOptions {
  /**
   * Your agents (made with `defineAgent`). The built-in canary (the path check behind `ping` and the
   * heartbeat schedule) is added unless you define one named `canary` yourself.
   * @example [incidentTriage]
   */
  agents: readonly AgentDefinition[] | AgentRegistry;
  /** Trigger sources beyond the built-in `ping` and `schedule` (made with `defineTrigger`). @default [] */
  triggers?: readonly TriggerDefinition[];
  /** Webhook sources the ingress serves at `POST /webhooks/<name>` (made with `defineWebhookSource`). @default [] */
  webhookSources?: readonly WebhookSource<unknown>[];
  /** Schedules synced into Temporal by `npm start` and `wakegate schedules sync` (made with `defineSchedule`). @default [the canary heartbeat] */
  schedules?: readonly ScheduleDefinition[];
  /** The fleet supervisor's policy: storm and error-rate breakers, rolling caps, what a trip does to each agent. @default defaultSupervisorPolicy */
  supervisor?: SupervisorPolicy;
  /** The model of agents that name none of their own. @default the configured one (offline unless WAKEGATE_MODEL says otherwise) */
  model?: ModelTurn;
  /** Configuration. @default loadConfig() (the environment) */
  config?: Config;
  /** Where the supervisor pages. @default PagerDuty Events API v2 at WAKEGATE_PAGER_URL */
  pager?: Pager;
}

/** A composed wakegate: the one place its registries are built; the worker, CLI, ingress, benchmarks and tests all take them from here. */
export interface Wakegate {
  readonly config: Config;
  readonly agents: AgentRegistry;
  /** Triggers and the agents each wakes. */
  readonly registry: TriggerRegistry;
  readonly webhookSources: readonly WebhookSource<unknown>[];
  readonly schedules: readonly ScheduleDefinition[];
  readonly supervisorPolicy: SupervisorPolicy;
  /** Every activity a worker registers, wired to the agents' code (overrides: tests point providers at stand-ins). */
  activities(overrides?: { outside?: OutsideConfig; model?: ModelTurn; pager?: Pager; supervisor?: SupervisorPolicy }): Activities;
  /** A gate on `taskQueue` (its own supervisor link with this policy unless given one). */
  gate(client: Client, taskQueue: string, opts?: Omit<GateOptions, 'client' | 'taskQueue' | 'registry'>): Gate;
  /** This process's line to the supervisor of `taskQueue`. */
  supervisorLink(client: Client, taskQueue: string): SupervisorLink;
  /**
   * A worker on `taskQueue` (default: the configured one) running the run, coalescer and supervisor
   * workflows and these activities; it connects with the configured Temporal settings unless given a
   * connection. Starts tracing in this process when the OTEL_* settings ask for it.
   */
  worker(
    opts?: { connection?: NativeConnection; namespace?: string; taskQueue?: string } & Omit<
      WakeWorkerOptions,
      'connection' | 'namespace' | 'taskQueue' | 'activities'
    > & { activities?: Activities },
  ): Promise<Worker>;
  /**
   * A Temporal client with the configured settings (TEMPORAL_ADDRESS, namespace, TLS, API key); fails
   * with what to check when Temporal is unreachable. Starts tracing in this process when the OTEL_*
   * settings ask for it, and then carries the trace in what it sends.
   */
  client(): Promise<Client>;
  /**
   * wakegate as a Temporal plugin for the worker (and client) you already run: pass it in
   * `Worker.create({ plugins: [app.plugin()], ... })` beside your own workflows and activities, and
   * that worker runs wakegate's too, for this deployment's agents (with tracing on, its
   * interceptors as well). Give that worker the task queue your gate starts runs on
   * (`app.gate(client, taskQueue)`; by default `app.config.taskQueue`): a gate on a queue no worker
   * polls takes events that no run picks up (`wakegate emit --wait` says so, exit 4).
   */
  plugin(): PluginModule.WakegatePlugin;
  /** The result of the run a gate's answer names, waiting while it is pending. */
  awaitRun(client: Client, answer: WakeAnswer): Promise<RunResult>;
}

function byName(agents: readonly AgentDefinition[] | AgentRegistry): Record<string, AgentDefinition> {
  const list = Array.isArray(agents) ? (agents as readonly AgentDefinition[]) : Object.values(agents as AgentRegistry);
  const out: Record<string, AgentDefinition> = {};
  for (const a of list) {
    if (out[a.policy.name]) throw new Error(`agent "${a.policy.name}" is defined twice`);
    out[a.policy.name] = a;
  }
  return out;
}

/**
 * Compose wakegate around your agents: validates that every agent's triggers exist and every
 * schedule's agent does, and returns what the worker, the gate, the ingress and the CLI need.
 * @example
 * export default createWakegate({ agents: [incidentTriage], triggers: [incidents], webhookSources: [tracker] });
 */
export function createWakegate(opts: WakegateOptions): Wakegate {
  assertOneTemporalVersion();
  const config = opts.config ?? loadConfig();
  const agents: AgentRegistry = Object.freeze({ canary, ...byName(opts.agents) });
  const registry = new TriggerRegistry([pingTrigger, scheduleTrigger, ...(opts.triggers ?? [])], agents);
  const schedules = opts.schedules ?? builtinSchedules;
  for (const s of schedules) {
    if (!agents[s.agent]) throw new Error(`schedule "${s.id}" wakes agent "${s.agent}", which is not defined (agents: ${Object.keys(agents).join(', ')})`);
  }
  const webhookSources = opts.webhookSources ?? [];
  for (const w of webhookSources) {
    if (!registry.get(w.trigger))
      throw new Error(`webhook source "${w.name}" feeds trigger "${w.trigger}", which is not defined (${registry.sources().join(', ')})`);
  }
  const supervisorPolicy = opts.supervisor ?? defaultSupervisorPolicy;
  assertSupervisorPolicy(supervisorPolicy);
  const activities: Wakegate['activities'] = (o = {}) =>
    lazy.activities().createActivities({
      registry,
      supervisor: o.supervisor ? (assertSupervisorPolicy(o.supervisor), o.supervisor) : supervisorPolicy,
      outside: o.outside ?? config.outside,
      ...((o.pager ?? opts.pager) ? { pager: o.pager ?? opts.pager } : {}),
      ...((o.model ?? opts.model) ? { model: o.model ?? opts.model } : {}),
    });
  const supervisorLink = (client: Client, taskQueue: string) => new (lazy.link().SupervisorLink)({ client, taskQueue, policy: supervisorPolicy });
  return {
    config,
    agents,
    registry,
    webhookSources,
    schedules,
    supervisorPolicy,
    activities,
    supervisorLink,
    gate: (client, taskQueue, o = {}) =>
      new (lazy.gate().Gate)({
        client,
        taskQueue,
        registry,
        supervisor: o.supervisor ?? supervisorLink(client, taskQueue),
        ...(config.startBacklog !== undefined ? { startBacklog: config.startBacklog } : {}),
        ...o,
      }),
    worker: async ({ connection, namespace, taskQueue, activities: given, ...rest } = {}) => {
      lazy.tracing().ensureTracing(config.tracing);
      return lazy.worker().createWakeWorker({
        ...rest,
        connection: connection ?? (await lazy.native().NativeConnection.connect(config.temporal.connectionOptions)),
        namespace: namespace ?? config.temporal.namespace,
        taskQueue: taskQueue ?? config.taskQueue,
        activities: given ?? activities(),
      });
    },
    client: () => {
      const tracing = lazy.tracing().ensureTracing(config.tracing);
      return lazy.temporal().connectClient(config, tracing ? { interceptors: tracing.clientInterceptors } : {});
    },
    awaitRun: (client, answer) => lazy.awaitRun().awaitRun(client, answer),
    plugin: () => {
      lazy.tracing().ensureTracing(config.tracing);
      return new (lazy.plugin().WakegatePlugin)(() => activities());
    },
  };
}
