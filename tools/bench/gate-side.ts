import { Client, Connection } from '@temporalio/client';
import { Gate } from '../../src/gate/gate';
import type { RunInput } from '../../src/core/run-types';
import { registryOf } from '../../test/helpers/app';
import { runPool } from './stats';

/**
 * One side of `bench:gate`'s start throughput, in a process of its own (tools/bench/gate.ts forks two):
 * `raw` starts the run workflow with `client.workflow.start` and unique IDs, `gate` admits unique
 * keys through the gate's one-call path. Each side has its own client, event loop and CPU share, so
 * neither's work in this process slows the other's calls. Protocol over IPC: warm up, say `ready`;
 * on `go` (a start and end time, epoch ms, the same for both sides) keep CONCURRENCY calls in flight
 * from the start until the end, then send each call's completion time and latency.
 */
export type SideKind = 'raw' | 'gate';
export interface SideGo {
  startAt: number;
  endAt: number;
}
export interface SideDone {
  kind: SideKind;
  /** Per call completed within the window: its completion time (epoch ms) and its latency (ms). */
  doneAt: number[];
  latencyMs: number[];
}

const [kind, address, tag, concurrencyArg, warmUpArg] = process.argv.slice(2) as [SideKind, string, string, string, string];
const CONCURRENCY = Number(concurrencyArg);
const WARM_UP = Number(warmUpArg);

async function main(): Promise<void> {
  const client = new Client({ connection: await Connection.connect({ address }) });
  const gate = new Gate({ client, taskQueue: `bench-gate-${tag}`, registry: registryOf() });
  const occurredAt = '2026-12-02T14:05:00Z';
  const call =
    kind === 'raw'
      ? (i: number) =>
          client.workflow.start('runWorkflow', { workflowId: `raw-${tag}-${i}`, taskQueue: `bench-raw-${tag}`, args: [{ eventKey: `raw-${i}` } as RunInput] })
      : (i: number) =>
          gate.admit({ source: 'ping', entity: `e-${tag}-${i}`, type: 'bench', occurredAt, deliveryId: `d-${i}` }).then((a) => {
            if (a.decision !== 'started') throw new Error(`expected started, got ${a.decision}`);
          });
  let next = 0;
  // Warm up (connection, server caches, the gate's supervisor link) before measuring.
  await runPool(WARM_UP, CONCURRENCY, () => call(next++));
  const go = await new Promise<SideGo>((resolve) => {
    process.once('message', (m) => resolve(m as SideGo));
    process.send!('ready');
  });
  await new Promise((r) => setTimeout(r, Math.max(0, go.startAt - Date.now())));
  const doneAt: number[] = [];
  const latencyMs: number[] = [];
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (Date.now() < go.endAt) {
        const t0 = performance.now();
        await call(next++);
        const t1 = performance.now();
        if (Date.now() > go.endAt) return;
        doneAt.push(Date.now());
        latencyMs.push(t1 - t0);
      }
    }),
  );
  await gate.close();
  const done: SideDone = { kind, doneAt, latencyMs };
  process.send!(done, () => process.exit(0));
}

main().catch((err) => {
  console.error(`bench:gate ${kind} side:`, err);
  process.exit(1);
});
