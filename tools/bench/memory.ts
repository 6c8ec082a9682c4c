import { loadApp } from '../../src/runtime/load-app';
import { syncSchedules } from '../../schedules/sync';
import { startApprover } from '../soak/approve';
import { readRuns } from '../soak/accounting';
import { LoadGenerator } from '../soak/load';
import { rssMb, type Role } from '../soak/procs';
import { startTopology, type Topology } from '../soak/topology';
import { FLAT_MB_PER_HOUR, rssTrend, type RssSample } from './memory-trend';
import { benchRecorder } from './results';

/**
 * `npm run bench:memory`: whether a worker's memory stays flat under steady production-shaped load.
 * The soak's topology (tools/soak/topology.ts: a dev server of its own, Redis, the stand-ins, worker
 * processes, two ingresses, two queue consumers) under the soak's mixed load (signed webhooks, queue
 * messages with duplicates, CLI emits, bursts on hot wake keys, steered notes, invalid input) for
 * BENCH_MEMORY_S, with no fault injected: a killed or restarted process would start its memory over.
 * Every process's RSS is read every 10 s; each gets its trend past the first third (./memory-trend.ts),
 * and a worker is flat when it grows by at most FLAT_MB_PER_HOUR once warm. Knobs: BENCH_MEMORY_S
 * (1800), BENCH_MEMORY_RATE (deliveries a second, 4), BENCH_MEMORY_WORKERS (2).
 */
const SECONDS = Number(process.env.BENCH_MEMORY_S ?? 1800);
const RATE = Number(process.env.BENCH_MEMORY_RATE ?? 4);
const WORKERS = Number(process.env.BENCH_MEMORY_WORKERS ?? 2);
const SAMPLE_MS = 10_000;
const WARM_FRACTION = 1 / 3;

const log = (msg: string) => console.error(`bench:memory ${new Date().toISOString().slice(11, 19)} ${msg}`);

interface ProcessReadings {
  role: Role;
  pids: number[];
  samples: RssSample[];
}

/** Read every live process's RSS every SAMPLE_MS, by name; returns the stop. */
function sample(top: Topology, t0: number, into: Map<string, ProcessReadings>): () => void {
  const timer = setInterval(() => {
    const live = top.procs.filter((p) => p.pid !== undefined);
    void rssMb(live.map((p) => p.pid!)).then((mb) => {
      for (const p of live) {
        const v = mb.get(p.pid!);
        if (v === undefined) continue;
        const r = into.get(p.name) ?? { role: p.role, pids: [], samples: [] };
        if (!r.pids.includes(p.pid!)) r.pids.push(p.pid!);
        r.samples.push({ s: Math.round((Date.now() - t0) / 100) / 10, mb: v });
        into.set(p.name, r);
      }
    });
  }, SAMPLE_MS);
  return () => clearInterval(timer);
}

async function main(): Promise<void> {
  const recorder = benchRecorder('memory', {
    seconds: SECONDS,
    ratePerS: RATE,
    workers: WORKERS,
    sampleEveryS: SAMPLE_MS / 1000,
    warmUp: `the first ${Math.round(SECONDS * WARM_FRACTION)} s (a third) are left out of each trend`,
    flat: `a worker's RSS grows by at most ${FLAT_MB_PER_HOUR} MB an hour once warm (least-squares slope over its readings)`,
    topology: "the soak's: a dev server of its own (SQLite), Redis, the stand-ins, the workers, two ingresses, two queue consumers, each a process of its own",
    load: "the soak's mixed load (tools/soak/load.ts), no faults; irreversible effects approved as they wait",
  });
  log(`starting: ${SECONDS} s at ${RATE}/s, ${WORKERS} workers`);
  const top = await startTopology({ workers: WORKERS, external: false });
  const problems: string[] = [];
  try {
    process.env.WAKEGATE_APP = top.env.WAKEGATE_APP;
    const app = loadApp(top.env.WAKEGATE_APP!);
    await app.supervisorLink(top.client(), top.taskQueue).ensure(true);
    await syncSchedules({ client: top.client(), taskQueue: top.taskQueue, definitions: app.schedules, registry: app.registry });

    const t0 = Date.now();
    const readings = new Map<string, ProcessReadings>();
    const stop = sample(top, t0, readings);
    const approver = startApprover(top);
    const load = new LoadGenerator({
      ingresses: top.ingresses,
      redis: () => top.redis(),
      registry: app.registry,
      cliEnv: top.env,
      ratePerS: RATE,
      cliEveryMs: 30_000,
    });
    const progress = setInterval(() => {
      const last = [...readings.entries()].map(([name, r]) => `${name} ${r.samples.at(-1)?.mb ?? '?'}`).join(', ');
      log(`${Math.round((Date.now() - t0) / 1000)} s: ${load.deliveries.length} deliveries; RSS MB: ${last}`);
    }, 60_000);
    await load.run(t0 + SECONDS * 1000);
    clearInterval(progress);
    stop();
    await approver.stop();
    const runs = await readRuns(top.client(), top.taskQueue);

    const processes = Object.fromEntries(
      [...readings.entries()].map(([name, r]) => {
        if (r.pids.length > 1) problems.push(`${name} ran as ${r.pids.length} processes: its trend is not one process's`);
        return [name, { role: r.role, ...rssTrend(r.samples, SECONDS, WARM_FRACTION), samples: r.samples.map((x) => [x.s, x.mb]) }];
      }),
    );
    const workers = Object.entries(processes).filter(([, p]) => p.role === 'worker');
    const accepted = load.deliveries.filter((d) => d.status >= 200 && d.status < 300).length;
    const results = {
      deliveries: load.deliveries.length,
      accepted,
      runs: { closed: runs.closed.length, open: runs.open.length },
      processes,
      targets: workers.map(([name, p]) => ({
        figure: "a worker's RSS growth once warm, MB per hour",
        process: name,
        value: p.slopeMbPerHour,
        target: FLAT_MB_PER_HOUR,
        met: p.flat,
      })),
    };
    for (const t of results.targets) log(`${t.process}: ${t.value} MB/h (target <= ${t.target}): ${t.met ? 'met' : 'MISSED'}`);
    await recorder.write(results, problems);
  } finally {
    await top.teardown().catch((err: unknown) => log(`teardown: ${(err as Error).message}`));
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
