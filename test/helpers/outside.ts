import { loadConfig } from '../../src/config/config';
import { standinSettings, startStandins, type Standins } from '../../tools/standins';
import type { Client } from '@temporalio/client';
import { keyEvent } from '../../src/gate/gate';
import type { RunInput, RunResult } from '../../src/core/run-types';
import { startIndex } from '../../src/core/run-index';
import { registryOf, activitiesOf } from './app';

/** The local stand-ins on free ports and the real activities wired to them. */
export async function startOutside(
  services?: Parameters<typeof startStandins>[1],
): Promise<{ standins: Standins; activities: ReturnType<typeof activitiesOf> }> {
  const standins = await startStandins({}, services);
  return { standins, activities: activitiesOf({ outside: standinOutside(standins) }) };
}

/** Environment for a worker child process pointed at these stand-ins. */
export function outsideEnv(s: Standins): Record<string, string> {
  return standinSettings(s.urls);
}

/** The outside world of the embedded default (offline model, local adapters) on these stand-ins' ports, parsed like any settings. */
export function standinOutside(s: Standins) {
  return loadConfig(standinSettings(s.urls)).outside;
}

let n = 0;
/** A wake input as the gate would key it. */
export function wakeInput(source: string, entity: string, type: string, payload: Record<string, unknown>): RunInput {
  return keyEvent(registryOf(), { source, entity, type, occurredAt: '2026-12-02T14:05:00Z', payload, deliveryId: `d-${++n}` }).input;
}

/** Start a wake directly (as the gate does, its index with it) and return its handle. */
export function startWake(client: Client, taskQueue: string, input: RunInput) {
  return client.workflow.start<(i: RunInput) => Promise<RunResult>>('runWorkflow', {
    workflowId: input.runKey,
    taskQueue,
    args: [input],
    typedSearchAttributes: startIndex(input),
  });
}
