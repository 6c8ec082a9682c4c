import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { chartPathOf, renderChart, resultsFiles } from '../../tools/bench/charts';
import type { BenchResultsFile } from '../../tools/bench/results-file';
import { histograms } from '../../tools/bench/stats';
import { BENCHES } from '../../tools/scripts/docs-bench';

/*
 * The benchmarks' charts (tools/bench/charts.ts): every results file has its SVG beside it, drawn from
 * that file alone, so drawing it again gives the same bytes; and the shapes the benchmarks write
 * now (latency histograms, the hot key's timeline, RSS samples) are drawn as distributions and
 * timelines.
 */

const read = (file: string) => JSON.parse(readFileSync(file, 'utf8')) as BenchResultsFile;

/** A well-formed SVG document: one root, its groups closed, no NaN coordinates. */
function assertSvg(svg: string): void {
  assert.match(svg, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"[^>]* width="\d+(\.\d+)?" height="\d+(\.\d+)?"/);
  assert.ok(svg.trimEnd().endsWith('</svg>'));
  assert.equal((svg.match(/<g[\s>]/g) ?? []).length, (svg.match(/<\/g>/g) ?? []).length, 'every <g> is closed');
  assert.doesNotMatch(svg, /NaN|undefined/);
}
/** The text the SVG shows, entities decoded (labels are in <text> elements, lines of a title in their <tspan>s). */
const texts = (svg: string) =>
  [...svg.matchAll(/<(text|tspan)[^>]*>([^<]+)<\/\1>/g)].map((m) =>
    m[2]!.replace(/&amp;/g, '&').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&#39;/g, "'"),
  );

describe('the charts of the benchmarks', () => {
  test('every results file has its chart beside it, and drawing it again from the file gives the same SVG', async () => {
    const files = resultsFiles();
    // Besides one file per benchmark: bench:coalesce over another key count (coalesce-<n>-keys.json), charted like the rest.
    assert.deepEqual(
      files
        .map((f) => f.replace(/^.*\//, ''))
        .filter((f) => !/^coalesce-\d+-keys\.json$/.test(f))
        .sort(),
      [...BENCHES].map((b) => `${b}.json`).sort(),
    );
    for (const file of files) {
      const svgPath = chartPathOf(file);
      assert.ok(existsSync(svgPath), `${svgPath} is missing: node --import tsx tools/bench/charts.ts`);
      const svg = await renderChart(read(file));
      assertSvg(svg);
      assert.equal(svg, readFileSync(svgPath, 'utf8'), `${svgPath} is not what its results file draws: node --import tsx tools/bench/charts.ts`);
    }
  });

  test('each chart carries its title, the date and machine line, the command, and each series with its figures', async () => {
    const gate = read(resultsFiles().find((f) => f.endsWith('gate.json'))!);
    const shown = texts(await renderChart(gate));
    const r = gate.results as {
      rawStartsPerSecond: number;
      gateStartsPerSecond: number;
      interval: { lo: number; hi: number };
      startLatencyMs: { gate: { p99: number } };
    };
    assert.ok(shown.includes('bench:gate: the gate against a raw workflow start'));
    assert.ok(shown.some((t) => t.startsWith(`${gate.at.slice(0, 16).replace('T', ' ')} UTC`) && t.includes(`Node ${gate.machine.node}`)));
    assert.ok(shown.includes(gate.command));
    assert.ok(shown.includes('raw client.workflow.start, unique IDs'));
    assert.ok(shown.includes('the gate, unique keys (one-call path)'));
    for (const v of [r.rawStartsPerSecond, r.gateStartsPerSecond, r.interval.lo, r.interval.hi, r.startLatencyMs.gate.p99])
      assert.ok(shown.includes(String(v)), `${v} is labelled`);
    for (const axis of ['starts per second', 'ms']) assert.ok(shown.includes(axis), `axis "${axis}"`);
  });

  test('latency with a histogram is drawn as a distribution; the hot key with a timeline, as answers and runs over time', async () => {
    const hist = histograms({ raw: [10, 12, 14, 40], gate: [11, 13, 15, 60] });
    const file: BenchResultsFile = {
      ...read(resultsFiles().find((f) => f.endsWith('coalesce.json'))!),
      problems: ['the hot key started 13 runs, over its bound of 12'],
    };
    const results = file.results as { hotKey: Record<string, unknown>; manyKeys: Record<string, unknown> };
    results.hotKey = {
      ...results.hotKey,
      answerMs: { p50: 12, p99: 40, histogram: hist.raw },
      timeline: { answersPerSecond: { started: [1], coalesced: [3, 5, 0, 2], skipped: [0, 4, 6] }, runs: [{ startS: 1.2, endS: 2.5 }, { startS: 3.1 }] },
    };
    results.manyKeys = { ...results.manyKeys, answerMs: { p50: 13, p99: 60, histogram: hist.gate } };
    const svg = await renderChart(file);
    assertSvg(svg);
    const shown = texts(svg);
    for (const label of [
      'One hot wake key over time',
      'seconds since the first offer',
      'answers per second',
      'run 1',
      'run 2',
      'coalesced',
      'skipped',
      'share of calls per bin, %',
    ]) {
      assert.ok(shown.includes(label), `"${label}" is shown`);
    }
    assert.ok(shown.some((t) => t.startsWith('the distribution, in bins of 2 ms')));
    assert.ok(shown.includes('problem the benchmark found: the hot key started 13 runs, over its bound of 12'));
  });

  test('a results file of no known benchmark is refused by name', async () => {
    const file = { ...read(resultsFiles()[0]!), bench: 'nope' };
    await assert.rejects(
      renderChart(file),
      /no chart for a benchmark named "nope" \(known: gate, run, schedules, coalesce, ingress, cli, capacity, cost, memory, rollout\)/,
    );
  });
});

test('latency histograms share one "nice" bin width and count every sample once', () => {
  const h = histograms({ a: [0, 0.4, 3, 99.9], b: [5, 250] });
  assert.equal(h.a.binMs, 10, '250 ms in at most 40 bins: 10 ms bins');
  assert.equal(h.b.binMs, 10);
  assert.deepEqual(h.a.counts, [3, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
  assert.equal(
    h.b.counts.reduce((s, n) => s + n, 0),
    2,
  );
  assert.equal(h.b.counts.length, 26);
});
