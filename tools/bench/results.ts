import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writeChart } from './charts';
import { RESULTS_DIR, type BenchResultsFile } from './results-file';

export type { BenchResultsFile } from './results-file';
export { RESULTS_DIR } from './results-file';

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
 * the benchmark's own servers start. `write` puts the results file in place, then draws its chart
 * beside it (`tools/bench/results/<name>.svg`, from the file just written), and returns the file's path.
 * `file`: another name for the results file (a run with a knob that makes it a different measure).
 */
export function benchRecorder(name: string, parameters: Record<string, unknown>, opts: { file?: string } = {}) {
  const at = new Date().toISOString();
  const loadavgAtStart = load();
  const t0 = performance.now();
  return {
    async write<R extends object>(results: R, problems: string[] = []): Promise<string> {
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
          ...(process.env.MALLOC_ARENA_MAX ? { mallocArenaMax: process.env.MALLOC_ARENA_MAX } : {}),
        },
        parameters,
        results,
        problems,
      };
      const target = path.join(RESULTS_DIR, `${opts.file ?? name}.json`);
      mkdirSync(RESULTS_DIR, { recursive: true });
      writeFileSync(target, `${JSON.stringify(file, null, 2)}\n`);
      console.log(`results: ${path.relative(process.cwd(), target)}`);
      console.log(`chart: ${path.relative(process.cwd(), await writeChart(target))}`);
      return target;
    },
  };
}
