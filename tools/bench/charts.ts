import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { chartSpec, type Spec } from './chart-specs';
import { RESULTS_DIR, type BenchResultsFile } from './results-file';
import type * as Vega from 'vega' with { 'resolution-mode': 'import' };
import type * as VegaLite from 'vega-lite' with { 'resolution-mode': 'import' };

/**
 * The benchmarks' charts: `tools/bench/results/<name>.svg`, drawn from `tools/bench/results/<name>.json` alone
 * (the spec of each is in ./chart-specs.ts). Each benchmark draws its own right after writing its
 * results file; `node --import tsx tools/bench/charts.ts` draws every chart again from the files there
 * (after a change to the charts: it runs no benchmark). Rendered server-side by Vega (through
 * Vega-Lite), with no canvas: the same file gives the same SVG, byte for byte.
 */

/** Vega and Vega-Lite are ES modules: loaded once, on the first chart, from this CommonJS project. */
let libs: Promise<[typeof Vega, typeof VegaLite]> | undefined;
const load = () => (libs ??= Promise.all([import('vega'), import('vega-lite')]));

/** Vega-Lite's and Vega's warnings go nowhere but an error: a chart that draws with warnings is wrong. */
function strictLogger(vega: typeof Vega) {
  const logger = vega.logger(vega.Warn);
  const fail = (...args: readonly unknown[]): never => {
    throw new Error(`chart: ${args.map(String).join(' ')}`);
  };
  logger.warn = fail as typeof logger.warn;
  logger.error = fail as typeof logger.error;
  return logger;
}

/** One Vega-Lite spec as an SVG document. */
export async function renderSpec(spec: Spec): Promise<string> {
  const [vega, vl] = await load();
  const logger = strictLogger(vega);
  const compiled = vl.compile(spec as unknown as Parameters<typeof vl.compile>[0], { logger }).spec;
  const view = new vega.View(vega.parse(compiled), { renderer: 'none', logger });
  try {
    return `${await view.toSVG()}\n`;
  } finally {
    view.finalize();
  }
}

/** The chart of one results file, as an SVG document. */
export async function renderChart(file: BenchResultsFile): Promise<string> {
  return renderSpec(chartSpec(file));
}

/** Where a results file's chart goes: beside it, `.svg` for `.json`. */
export const chartPathOf = (jsonPath: string) => jsonPath.replace(/\.json$/, '.svg');

/** Read one results file and write its chart beside it; returns the chart's path. */
export async function writeChart(jsonPath: string): Promise<string> {
  const file = JSON.parse(readFileSync(jsonPath, 'utf8')) as BenchResultsFile;
  const target = chartPathOf(jsonPath);
  writeFileSync(target, await renderChart(file));
  return target;
}

/** Every results file in `dir`, by path, sorted. */
export const resultsFiles = (dir = RESULTS_DIR) =>
  readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => path.join(dir, f));

async function main(): Promise<void> {
  const files = resultsFiles();
  if (!files.length) throw new Error(`no results files in ${RESULTS_DIR}: run a benchmark first (npm run bench:<name>)`);
  for (const file of files) console.log(`chart: ${path.relative(process.cwd(), await writeChart(file))}`);
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
