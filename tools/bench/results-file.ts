import path from 'node:path';

/**
 * One benchmark's results file, `tools/bench/results/<name>.json`: the figures the docs quote are generated
 * from these files (`npm run docs`), never copied by hand, and its chart `tools/bench/results/<name>.svg` is
 * drawn from it (tools/bench/charts.ts). Each file says how it was made: the command with the knobs it was
 * given, when, on what machine and how loaded it was, and the parameters in force; then the results,
 * and the problems the benchmark found (a failed check is written down too, not hidden).
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
    /** glibc's malloc arenas (the npm scripts set 2: docs/OPERATIONS.md, memory); absent when unset. */
    mallocArenaMax?: string;
  };
  parameters: Record<string, unknown>;
  results: R;
  /** What the benchmark's own checks found wrong; empty when every check passed. */
  problems: string[];
}

/** Where the results files and their charts live. */
export const RESULTS_DIR = path.join(__dirname, 'results');
