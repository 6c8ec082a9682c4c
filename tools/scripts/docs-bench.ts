import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { BenchResultsFile } from '../bench/results';
import { capacityLines } from './docs-capacity';
import { costLines } from './docs-cost';

/**
 * The benchmark tables of the docs, made from `tools/bench/results/<name>.json` alone: each section says
 * which command made its file, when, and how loaded the machine was, then gives the figures and
 * shows the chart drawn beside the file (`tools/bench/results/<name>.svg`). Nothing here measures or
 * rounds anew; a figure the file does not hold is not shown.
 */

export const BENCHES = ['gate', 'run', 'schedules', 'coalesce', 'ingress', 'cli', 'capacity', 'cost', 'rollout', 'memory'] as const;
export type BenchName = (typeof BENCHES)[number];

type Json = Record<string, unknown>;
/** A section's lines from its results; `other` reads another benchmark's results, for a section that sets them side by side. */
type Renderer = (r: Json, other: (name: string) => Json | undefined) => string[];

export function resultsFile(root: string, name: string): string {
  return path.join(root, 'tools', 'bench', 'results', `${name}.json`);
}

export function readResults(root: string, name: string): BenchResultsFile<Json> | undefined {
  const file = resultsFile(root, name);
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as BenchResultsFile<Json>) : undefined;
}

const obj = (v: unknown): Json => (v && typeof v === 'object' ? (v as Json) : {});
const num = (v: unknown): string => (typeof v === 'number' && Number.isFinite(v) ? String(v) : '–');
const row = (...cells: unknown[]) => `| ${cells.map((c) => String(c)).join(' | ')} |`;
const counts = (v: unknown) =>
  Object.entries(obj(v))
    .map(([k, n]) => `${num(n)} \`${k}\``)
    .join(', ') || 'none';
const p = (v: unknown, key = 'p50') => num(obj(v)[key]);

/** A row of one series: its rate, its latency p50 and p99, and its per-round rates. */
const seriesRow = (label: string, rate: unknown, lat: unknown, perRound: unknown) =>
  row(label, num(rate), p(lat), p(lat, 'p99'), (perRound as number[] | undefined)?.join(' / ') ?? '–');

const gate: Renderer = (r) => {
  const lat = obj(r.startLatencyMs);
  const storm = obj(r.storm);
  const interval = obj(r.interval);
  const spread = obj(r.spread);
  return [
    row('series', 'starts/s', 'start p50 ms', 'start p99 ms'),
    row('---', '---', '---', '---'),
    row('raw `client.workflow.start`, unique IDs', num(r.rawStartsPerSecond), p(lat.raw), p(lat.raw, 'p99')),
    row('the gate, unique keys (one-call path)', num(r.gateStartsPerSecond), p(lat.gate), p(lat.gate, 'p99')),
    '',
    `The two series ran side by side, each in a process of its own at the same concurrency. ` +
      `Ratio gate / raw: **${num(r.ratio)}** on the totals, ` +
      `${num(interval.level === undefined ? undefined : Number(interval.level) * 100)}% interval ${num(interval.lo)}–${num(interval.hi)} ` +
      `(a paired block bootstrap over ${num(interval.blocks)} spans of ${num(interval.blockSeconds)} s); ` +
      `each span's own ratio from ${num(spread.min)} to ${num(spread.max)}, quartiles ${num(spread.q1)}–${num(spread.q3)}.`,
    '',
    `Storm: ${num(storm.deliveries)} concurrent deliveries of one logical event started **${num(storm.executions)}** execution(s) ` +
      `(${counts(storm.decisions)}); answers p50 ${p(storm.answerMs)} ms, p99 ${p(storm.answerMs, 'p99')} ms, max ${p(storm.answerMs, 'max')} ms.`,
  ];
};

const run: Renderer = (r) => {
  const series = (r.series as { name: string; p50: number; p99: number }[] | undefined) ?? [];
  const ratio = obj(r.ratio);
  return [
    row('series', 'p50 ms', 'p99 ms'),
    row('---', '---', '---'),
    ...series.map((s) => row(`\`${s.name}\``, num(s.p50), num(s.p99))),
    '',
    `Ratio run / bare: \`no_op\` p50 **${p(ratio.noOp)}**, p99 ${p(ratio.noOp, 'p99')}; three-step p50 **${p(ratio.threeStep)}**, p99 ${p(ratio.threeStep, 'p99')}.`,
  ];
};

const rollout: Renderer = (r) => {
  const rows = (key: string, label: string) =>
    ((r[key] as { name: string; p50: number; p99: number }[] | undefined) ?? []).map((s) => row(label, s.name, num(s.p50), num(s.p99)));
  const added = obj(r.addedP50Ms);
  return [
    row('figure', 'series', 'p50 ms', 'p99 ms'),
    row('---', '---', '---', '---'),
    ...rows('answer', "the gate's answer (event → accepted)"),
    ...rows('admission', "the run's admission (started → first step done)"),
    ...rows('wake', 'the whole wake (event → terminal)'),
    '',
    `The ramp adds at p50: **${num(added.answer)} ms** to the gate's answer, **${num(added.admission)} ms** to the run's admission, ` +
      `${num(added.wake)} ms to the whole wake. Versions the ramp ran: ${counts(r.rampVersions)}.`,
  ];
};

const schedules: Renderer = (r) => {
  const s = (label: string, v: unknown, ratio?: unknown) => {
    const x = obj(v);
    return row(label, num(x.fires), num(x.p50Ms), num(x.p99Ms), num(x.maxMs), ratio ? `${p(ratio)} / ${p(ratio, 'p99')}` : '–');
  };
  const reference = obj(r.reference);
  const wakegate = obj(r.wakegate);
  return [
    row('series', 'fires', 'lag p50 ms', 'lag p99 ms', 'max ms', 'ratio to bare, p50 / p99'),
    row('---', '---', '---', '---', '---', '---'),
    s('wakegate: the Schedule starts the run; lag to its first step', wakegate, r.ratio),
    s('bare Temporal: a Schedule starting a one-activity workflow', r.bareTemporal),
    s('reference: a bare Schedule starting the run workflow with a fixed input', reference, reference.ratio),
    '',
    ...ratioLine(obj(r.ratio), obj(reference.ratio)),
    `Windows of wakegate's series that did not run the agent (not counted as lag): ${counts(wakegate.notRun)}.`,
    '',
    row('hop', 'median ms'),
    row('---', '---'),
    ...Object.entries(obj(r.medianHopsMs)).map(([hop, ms]) => row(hop, num(ms))),
  ];
};

/** The p50 ratio over all fires, its paired block bootstrap interval, the spread of the blocks' own ratios, and the difference in ms. */
const ratioLine = (wg: Json, ref: Json): string[] => {
  if (!Array.isArray(wg.perBlock)) return [];
  const ci = obj(wg.interval);
  const spread = (x: Json) => {
    const s = obj(x.spread);
    const i = obj(x.interval);
    return `its ${Math.round(Number(i.level) * 100)}% interval ${num(i.lo)} – ${num(i.hi)}, ±${num(i.halfWidth)}; blocks min ${num(s.min)}, quartiles ${num(s.q1)} – ${num(s.q3)}, max ${num(s.max)}`;
  };
  return [
    `The p50 ratio is the p50 over all fires over bare's, the series side by side; its interval is a paired block bootstrap over ${num(ci.blocks)} spans of ${num(ci.blockSeconds)} s ` +
      `(each span's own ratio gives the spread): wakegate **${num(wg.p50)}** (${spread(wg)}), p50 later than bare by ${p(wg.extraMs)} ms; ` +
      `reference ${num(ref.p50)} (${spread(ref)}), later by ${p(ref.extraMs)} ms.`,
    '',
  ];
};

/** After a one-event-per-key phase: RSS and the cache once its runs ended, the starts, and how long its runs took to end. */
const oneEachMemory = (one: Json, whose: string): string[] =>
  one.rssMb
    ? [
        row(
          `${whose} RSS and cache once its runs had ended`,
          `RSS ${num(obj(one.rssMb).before)} MB before the phase, **${num(obj(one.rssMb).after)} MB after**; ${num(obj(one.cachedWorkflows).after)} workflows cached (bound 500); ` +
            `${num(one.startsWithOffer)} new keys by start, ${num(one.startsDeferred)} by update while the workers were behind; ` +
            (Array.isArray(one.byRound)
              ? `RSS by round, once its runs ended: ${(one.byRound as Json[]).map((b) => `${num(b.keys)} keys ${num(b.rssMb)} MB (${num(b.cached)} cached)`).join(', ')}; `
              : '') +
            `runs ended ${Array.isArray(one.runsEndedAfterS) ? (one.runsEndedAfterS as unknown[]).map((x) => num(x)).join(', ') : '–'} s after each round's last answer`,
        ),
      ]
    : [];

/** The phase's wakes end to end (offered until their runs closed) against the one-call path's, and its figures beside their targets. */
const oneEachEndToEnd = (one: Json, label: string): string[] => {
  if (!one.endToEnd) return [];
  const e2e = obj(one.endToEnd);
  const targets = Array.isArray(one.targets) ? (one.targets as Json[]) : [];
  return [
    row(
      `${label} wakes end to end (offered until their runs closed), against the canary's one-call path`,
      `**${num(e2e.coalescePerS)} wakes/s** coalescing against ${num(e2e.oneCallPerS)} one-call (${num(e2e.keysPerRound)} keys a round in each, the same worker; ` +
        `one-call answered ${num(e2e.oneCallAdmittedPerS)}/s, ${num(e2e.oneCallErrors)} errors); ` +
        targets
          .map((t) => `${String(t.figure)}: **${num(t.value)}** (target ${t.atLeast ? '>=' : '<='} ${num(t.target)}: ${t.met ? 'met' : '**missed**'})`)
          .join('; '),
    ),
  ];
};

/** The same phase at 20,000 keys (tools/bench/results/coalesce-20000-keys.json, `BENCH_ONE_EACH_KEYS=20000`). */
const oneEachAtScale = (one: Json, rss: Json): string[] => [
  row(
    `${num(one.keys)} wake keys × 1 event (\`BENCH_ONE_EACH_KEYS=20000\`, its own results file)`,
    `**${num(one.coalescePerS)} events/s** against ${num(one.rawStartsPerS)} raw starts/s: ratio **${num(one.ratio)}**; answers p50 ${p(obj(one.answerMs))} ms, p99 ${p(obj(one.answerMs), 'p99')} ms; ${num(one.errors)} errors${one.firstError ? ` (first: ${String(one.firstError)})` : ''}; RSS ${num(rss.warm)} MB warm`,
  ),
  ...oneEachMemory(one, 'at 20,000 keys,'),
  ...oneEachEndToEnd(one, 'at 20,000 keys,'),
];

const coalesce: Renderer = (r, other) => {
  if (typeof r.coalescePerS === 'number') return coalesceAgainstRaw(r, other);
  const hot = obj(r.hotKey);
  const many = obj(r.manyKeys);
  const rss = obj(r.rssMb);
  return [
    row('', 'result'),
    row('---', '---'),
    row(
      `one wake key: ${num(hot.offered)} distinct events offered at ${num(hot.offeredPerSecond)}/s`,
      `**${num(hot.achievedPerSecond)} events/s** achieved over ${num(hot.seconds)} s; answers p50 ${p(hot.answerMs)} ms, p99 ${p(hot.answerMs, 'p99')} ms; ${num(hot.errors)} errors`,
    ),
    row('its decisions', counts(hot.decisions)),
    row('runs started', `**${num(hot.runsStarted)}** (bound: seconds / maxWait + 1 = ${num(hot.runBound)})`),
    row(
      "the coalescer's history",
      `${num(hot.coalescerExecutions)} executions (continued as new ${typeof hot.coalescerExecutions === 'number' ? hot.coalescerExecutions - 1 : '–'} times); the current one at ${num(hot.coalescerHistoryLength)} events`,
    ),
    row(
      `${num(many.keys)} wake keys × ${num(many.eventsPerKey)} events, key after key`,
      `${num(many.achievedPerSecond)} events/s; answers p50 ${p(many.answerMs)} ms, p99 ${p(many.answerMs, 'p99')} ms; ${num(many.runsStarted)} runs; ${num(many.errors)} errors`,
    ),
    row(
      'RSS of the benchmark process (gate and worker)',
      `${num(rss.before)} MB before, ${num(rss.afterHotKey)} MB after the hot key, ${num(rss.afterManyKeys)} MB after the many keys`,
    ),
  ];
};

/** A coalesce file with raw starts beside the many keys, the hot key open loop, RSS warm and at the end. */
const coalesceAgainstRaw: Renderer = (r, other) => {
  const hot = obj(r.hotKey);
  const many = obj(r.manyKeys);
  const rss = obj(r.rssMb);
  const from = obj(r.inFlightRefusalsFrom);
  return [
    row('', 'result'),
    row('---', '---'),
    row(
      `${num(many.keys)} wake keys × ${num(many.eventsPerKey)} events, ${num(many.concurrency)} outstanding, against raw starts`,
      `**${num(r.coalescePerS)} events/s** against ${num(r.rawStartsPerS)} raw starts/s: ratio **${num(r.ratio)}** (median of the rounds ${num(many.medianRoundRatio)}); ` +
        `answers p50 ${p(many.answerMs)} ms, p99 ${p(many.answerMs, 'p99')} ms; ${num(many.runs)} runs; ${num(many.errors)} errors`,
    ),
    row(
      `one wake key: ${num(hot.events)} distinct events offered open loop at ${num(hot.offeredPerS)}/s`,
      `all answered in **${num(hot.seconds)} s**; answers p50 ${num(hot.p50Ms)} ms, **p99 ${num(hot.p99Ms)} ms**; ${num(hot.errors)} errors`,
    ),
    row('its decisions', counts(hot.decisions)),
    row('runs started', `**${num(hot.runs)}** (bound: ceil(seconds / maxWait) + 1 = ${num(hot.bound)})`),
    ...(hot.dedup
      ? [
          row(
            'its dedup table at the end',
            `${num(obj(hot.dedup).held)} events held (capacity ${num(obj(hot.dedup).capacity)}), **${num(obj(hot.dedup).forgottenEarly)} let go early**; ` +
              `${num(obj(hot.dedup).answeredFromFirstDecision)} of ${num(obj(hot.dedup).redelivered)} redeliveries of its first, middle and last events answered from their first decision`,
          ),
        ]
      : []),
    ...(hot.payloads
      ? [
          row(
            'the payloads its coalescer sent (read from its histories)',
            `largest **${num(obj(hot.payloads).largestBytes)} bytes** (${String(obj(hot.payloads).largestKind)}); ` +
              `**${num(obj(hot.payloads).overWarning)} over ${num(obj(hot.payloads).warnAtBytes)}** (the SDK's TMPRL1103 warning; a continue-as-new input counts again as the next execution's start); ` +
              `its largest continue-as-new input, in JSON characters: ${Object.entries(obj(obj(hot.payloads).largestContinueAsNewChars ?? {}))
                .slice(0, 5)
                .map(([k, v]) => `${k} ${num(v)}`)
                .join(', ')}` +
              (obj(hot.payloads).longestHistory
                ? `; its longest history ${num(obj(obj(hot.payloads).longestHistory).events)} events, ${num(obj(obj(hot.payloads).longestHistory).bytes)} bytes`
                : ''),
          ),
        ]
      : []),
    ...(r.oneEventPerKey
      ? [
          row(
            `${num(obj(r.oneEventPerKey).keys)} wake keys × 1 event (a nightly import), ${num(obj(r.oneEventPerKey).concurrency)} outstanding, against raw starts`,
            `**${num(obj(r.oneEventPerKey).coalescePerS)} events/s** against ${num(obj(r.oneEventPerKey).rawStartsPerS)} raw starts/s: ratio **${num(obj(r.oneEventPerKey).ratio)}**; ` +
              `answers p50 ${p(obj(r.oneEventPerKey).answerMs)} ms, p99 ${p(obj(r.oneEventPerKey).answerMs, 'p99')} ms` +
              (obj(r.oneEventPerKey).rawStartMs
                ? ` (a raw start itself: p50 ${p(obj(r.oneEventPerKey).rawStartMs)} ms, p99 ${p(obj(r.oneEventPerKey).rawStartMs, 'p99')} ms)`
                : '') +
              `; ${num(obj(r.oneEventPerKey).errors)} errors`,
          ),
          ...oneEachMemory(obj(r.oneEventPerKey), 'its'),
          ...oneEachEndToEnd(obj(r.oneEventPerKey), 'its'),
        ]
      : []),
    ...(other('coalesce-20000-keys')?.oneEventPerKey
      ? oneEachAtScale(obj(other('coalesce-20000-keys')!.oneEventPerKey), obj(other('coalesce-20000-keys')!.rssMb))
      : []),
    row(
      'RSS of the benchmark process (gate and worker)',
      (rss.beforeCacheFull !== undefined ? `${num(rss.beforeCacheFull)} MB before the warm-up filled the workflow cache, ` : '') +
        (rss.cacheFull !== undefined ? `${num(rss.cacheFull)} MB once full, ` : '') +
        `${num(rss.warm)} MB warm${rss.cacheFull !== undefined ? ' (the cache turned over once)' : ''}, ${num(rss.afterManyKeys)} MB after the many keys, **${num(rss.end)} MB at the end**`,
    ),
    ...(r.cachedWorkflows
      ? [
          row(
            "workflows in the worker's cache at those readings",
            (rss.beforeCacheFull !== undefined ? `${num(obj(r.cachedWorkflows).beforeCacheFull)}, ` : '') +
              (rss.cacheFull !== undefined ? `${num(obj(r.cachedWorkflows).cacheFull)}, ` : '') +
              `${num(obj(r.cachedWorkflows).warm)}, ${num(obj(r.cachedWorkflows).afterManyKeys)}, ${num(obj(r.cachedWorkflows).end)} (the coalescers stay open until their dedup horizon)` +
              (typeof r.rssKbPerCachedWorkflow === 'number'
                ? `; RSS grew ${num(r.rssKbPerCachedWorkflow)} KB per workflow the cache gained over ${rss.beforeCacheFull !== undefined ? "the warm-up's filling of the cache" : 'the many keys'}`
                : ''),
          ),
        ]
      : []),
    row('updates refused with the in-flight limit', `**${num(r.inFlightRefusals)}** (counted from: ${String(from.counted ?? '–')})`),
  ];
};

const ingress: Renderer = (r) => {
  const lat = obj(r.latencyMs);
  const perRound = obj(r.perRound);
  const queue = obj(r.queue);
  const burst = obj(r.burst);
  const rss = obj(burst.rssMb);
  return [
    row('series', 'per second', 'p50 ms', 'p99 ms', 'per round'),
    row('---', '---', '---', '---', '---'),
    seriesRow(
      typeof r.bareStartsPerSecond === 'number' ? 'raw `client.workflow.start` of the same run, its worker up' : 'raw `client.workflow.start`, unique IDs',
      r.rawStartsPerSecond,
      lat.raw,
      perRound.raw,
    ),
    ...(typeof r.bareStartsPerSecond === 'number'
      ? [seriesRow('reference: the same start on a task queue no worker polls', r.bareStartsPerSecond, lat.bare, perRound.bare)]
      : []),
    ...(typeof r.coalescingRatio === 'number'
      ? [
          seriesRow('signed webhook → 202, one-call agent', r.webhookAcceptsPerSecond, lat.webhook, perRound.webhook),
          seriesRow('signed webhook → 202, coalescing agent (its decision)', r.coalescingAcceptsPerSecond, lat.coalescing, perRound.coalescing),
          '',
          `Ratio one-call webhook / raw: **${num(r.ratio)}** on the totals, ${num(r.medianRoundRatio)} as the median of the per-round ratios; ` +
            `coalescing webhook / raw: **${num(r.coalescingRatio)}**, ${num(r.coalescingMedianRoundRatio)}. ` +
            `Decisions: one-call ${counts(obj(r.decisions).webhook)}; coalescing ${counts(obj(r.decisions).coalescing)}.`,
        ]
      : [
          seriesRow('signed webhook → 202 (verify, parse, gate, start)', r.webhookAcceptsPerSecond, lat.webhook, perRound.webhook),
          '',
          `Ratio webhook / raw: **${num(r.ratio)}** on the totals, ${num(r.medianRoundRatio)} as the median of the per-round ratios.`,
        ]),
    '',
    `Queue: ${num(queue.messages)} messages drained through the gate by one consumer in ${num(queue.seconds)} s, ` +
      `**${num(queue.acceptedPerSecond)} accepted and acked/s**, ${num(queue.pendingAfter)} pending after.`,
    '',
    `Sustained burst: ${num(burst.seconds)} s, ${num(burst.accepted)} accepted (${num(burst.acceptedPerSecond)}/s); RSS ${num(rss.start)} MB at start, ` +
      `max ${num(rss.max)} MB, mean of the first third ${num(rss.firstThirdMean)} MB, of the last third ${num(rss.lastThirdMean)} MB.`,
  ];
};

const cli: Renderer = (r) => {
  const startup = obj(r.startup);
  const source = obj(startup.fromSourceThroughTsx);
  const targets = obj(r.targets);
  const ms = (v: unknown) => `p50 ${p(v)} ms, p99 ${p(v, 'p99')} ms, max ${p(v, 'max')} ms`;
  const met = (ok: unknown) => (ok ? 'target met' : '**target missed**');
  const head = obj(r.headline);
  const singleHead = obj(head.singleOverNode);
  const fileHead = obj(head.fileOverRaw);
  const lines = [
    row('', 'result'),
    row('---', '---'),
    ...(r.headline
      ? [
          row(
            'one `wakegate emit`, compiled deployment, over `node -e 0` beside it (p50)',
            `**${num(singleHead.figure)}x** (${num(singleHead.emitP50Ms)} ms vs ${num(singleHead.nodeP50Ms)} ms; target <= ${num(singleHead.target)}x: ${met(singleHead.met)})`,
          ),
          row(
            '`wakegate emit --file` over raw starts in the same run',
            `**${num(fileHead.figure)}** (${num(fileHead.fileEventsPerSecond)} events/s vs ${num(fileHead.rawStartsPerSecond)} starts/s; target >= ${num(fileHead.target)}: ${met(fileHead.met)})`,
          ),
        ]
      : []),
    row(`\`wakegate --help\`, the compiled bin, ${num(startup.runs)} fresh processes`, ms(startup.ms)),
    row('the same from source through tsx', ms(source.ms)),
  ];
  for (const [name, d] of Object.entries(obj(r.deployments))) {
    const x = obj(d);
    const single = obj(x.single);
    const burst = obj(x.burst);
    const ok = obj(x.targetsMet);
    lines.push(
      row(`**${name}**: \`${String(x.module)}\`, ${String(x.how)}`, ''),
      row(
        `${num(single.calls)} \`wakegate emit\` one at a time`,
        `${ms(single.answerMs)} (target p50 <= ${num(targets.singleP50Ms)} ms: ${met(ok.single)})` +
          (single.overNode !== undefined
            ? `; ${num(single.overNode)}x \`node -e 0\` beside it; the first call, which starts the resident process, ${num(single.coldMs)} ms`
            : ''),
      ),
      row(
        `${num(burst.calls)} \`wakegate emit\` processes, ${num(burst.parallel)} at a time`,
        `${ms(burst.answerMs)}; the whole burst ${num(burst.wallMs)} ms (target p50 <= ${num(targets.burstP50Ms)} ms: ${met(ok.burst)}); ` +
          `**${num(burst.answered)} answered** (${counts(burst.decisions)})`,
      ),
      row(
        `runs of the ${num(Number(single.answered) + Number(burst.answered) + (name === 'js' ? Number(obj(obj(r.inProcess).single).answered ?? 0) : 0))} answered emits`,
        `${num(x.runsSucceeded)} ended \`success\``,
      ),
    );
  }
  const inProcess = obj(obj(r.inProcess).single);
  if (r.inProcess)
    lines.push(
      row(
        '**js**, each emit in its own process (`WAKEGATE_RESIDENT=off`), one at a time',
        `${ms(inProcess.answerMs)}; ${num(inProcess.overNode)}x \`node -e 0\``,
      ),
    );
  const file = obj(r.file);
  if (r.file) {
    const first = obj(file.file);
    const again = obj(file.rerun);
    lines.push(
      row(
        `raw \`client.workflow.start\`, ${num(file.events)} unique IDs at ${num(file.concurrency)}, before and after`,
        `${num(obj(file.raw).startsPerSecond)} starts/s`,
      ),
      row(
        `\`wakegate emit --file\`, ${num(file.events)} events at --concurrency ${num(file.concurrency)}, spawn to exit`,
        `${num(first.eventsPerSecond)} events/s (${counts(first.decisions)})`,
      ),
      row(
        'the same file again',
        `${num(again.eventsPerSecond)} events/s (${counts(again.decisions)}); ${num(again.newStarts)} new starts, same workflow IDs: ${String(again.sameWorkflowIds)}`,
      ),
    );
  }
  return lines;
};

const memory: Renderer = (r) => {
  const procs = Object.entries(obj(r.processes)).map(([name, v]) => ({ name, p: obj(v) }));
  const runs = obj(r.runs);
  return [
    row('process', 'role', 'RSS warm, MB', 'at the end', 'max', 'growth once warm, MB/h', 'flat'),
    row('---', '---', '---', '---', '---', '---', '---'),
    ...procs.map(({ name, p }) =>
      row(
        name,
        String(p.role),
        num(p.warmMb),
        num(p.endMb),
        num(p.maxMb),
        `**${num(p.slopeMbPerHour)}**`,
        p.role === 'worker' ? (p.flat ? 'met' : '**missed**') : '–',
      ),
    ),
    '',
    `Load: ${num(r.deliveries)} deliveries, ${num(r.accepted)} accepted; ${num(runs.closed)} runs closed, ${num(runs.open)} open at the end.`,
  ];
};

const RENDERERS: Record<BenchName, Renderer> = { gate, run, schedules, coalesce, ingress, cli, capacity: capacityLines, cost: costLines, rollout, memory };

/** How a results file was made: command, date, machine and its load, parameters, problems found. */
function provenance(f: BenchResultsFile<Json>): string[] {
  const m = f.machine;
  const params = Object.entries(f.parameters)
    .map(([k, v]) => `\`${k}\` ${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join('; ');
  return [
    `\`${f.command}\`, ${f.at.slice(0, 16).replace('T', ' ')} UTC, ${f.durationS} s; ${m.cpus} × ${m.cpuModel}, Node ${m.node}` +
      `${m.mallocArenaMax ? `, MALLOC_ARENA_MAX=${m.mallocArenaMax}` : ''}; ` +
      `load average ${m.loadavgAtStart.join(' / ')} at the start, ${m.loadavgAtEnd.join(' / ')} at the end (1 / 5 / 15 min).`,
    '',
    `Parameters: ${params}.`,
    '',
    ...(f.problems.length ? [`**Problems the benchmark found:** ${f.problems.map((x) => `\`${x}\``).join('; ')}.`, ''] : []),
  ];
}

/**
 * The chart drawn beside a results file (tools/bench/charts.ts), linked from docs/ where it is: a benchmark
 * writes it right after its results file, so a results file without one is said, not hidden.
 */
function chart(root: string, name: string): string[] {
  const svg = resultsFile(root, name).replace(/\.json$/, '.svg');
  if (!existsSync(svg)) return ['', `_No chart beside the results file: run \`node --import tsx tools/bench/charts.ts\`, then \`npm run docs\`._`];
  return ['', `![bench:${name}: the chart of tools/bench/results/${name}.json](../tools/bench/results/${name}.svg)`];
}

/** The generated section of one benchmark, from its results file, with its chart. */
export function benchSection(root: string, name: string): string {
  if (!(BENCHES as readonly string[]).includes(name)) throw new Error(`no benchmark named "${name}" (known: ${BENCHES.join(', ')})`);
  const f = readResults(root, name);
  if (!f) return `_No results file yet: run \`npm run bench:${name}\`, then \`npm run docs\`._`;
  const other = (n: string) => readResults(root, n)?.results;
  return [...provenance(f), ...RENDERERS[name as BenchName](f.results, other), ...chart(root, name)].join('\n');
}
