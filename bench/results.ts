import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * One benchmark's results file, `bench/results/<name>.json`: the figures the docs quote are generated
 * from these files (`npm run docs`), never copied by hand. Each file says how it was made: the
 * command with the knobs it was given, when, on what machine and how loaded it was, and the
 * parameters in force; then the results, and the problems the benchmark found (a failed check is
 * written down too, not hidden).
 */
export interface BenchResultsFile<R = Record<string, unknown>> {
  bench: string;
  /** The command that made this file, with the BENCH_* settings it was given. */
  command: string;
  /** When the benchmark started, ISO-8601 UTC. */
  at: string;
  durationS: number;
  machine: {
    cpus: number;
    cpuModel: string;
    memoryGb: number;
    platform: string;
    node: string;
    /** 1, 5 and 15 minute load averages as the benchmark started and as it ended: the machine may be shared. */
    loadavgAtStart: number[];
    loadavgAtEnd: number[];
  };
  parameters: Record<string, unknown>;
  results: R;
  /** What the benchmark's own checks found wrong; empty when every check passed. */
  problems: string[];
}

export const RESULTS_DIR = path.join(__dirname, 'results');

const load = () => os.loadavg().map((x) => Math.round(x * 100) / 100);

/** The command line that reproduces this run: its BENCH_* settings, then `npm run bench:<name>`. */
function commandOf(name: string): string {
  const knobs = Object.entries(process.env)
    .filter(([k]) => k.startsWith('BENCH_'))
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}=${v}`);
  return [...knobs, `npm run bench:${name}`].join(' ');
}

/**
 * Start recording one benchmark: call it first thing, so the load average is the machine's before
 * the benchmark's own servers start. `write` puts the file in place and returns its path.
 */
export function benchRecorder(name: string, parameters: Record<string, unknown>) {
  const at = new Date().toISOString();
  const loadavgAtStart = load();
  const t0 = performance.now();
  return {
    write<R extends object>(results: R, problems: string[] = []): string {
      const file: BenchResultsFile<R> = {
        bench: name,
        command: commandOf(name),
        at,
        durationS: Math.round((performance.now() - t0) / 1000),
        machine: {
          cpus: os.cpus().length,
          cpuModel: os.cpus()[0]?.model.trim() ?? 'unknown',
          memoryGb: Math.round(os.totalmem() / 2 ** 30),
          platform: `${os.platform()} ${os.release()}`,
          node: process.version,
          loadavgAtStart,
          loadavgAtEnd: load(),
        },
        parameters,
        results,
        problems,
      };
      const target = path.join(RESULTS_DIR, `${name}.json`);
      mkdirSync(RESULTS_DIR, { recursive: true });
      writeFileSync(target, `${JSON.stringify(file, null, 2)}\n`);
      console.log(`results: ${path.relative(process.cwd(), target)}`);
      return target;
    },
  };
}
