import { bar, groupedBars, heading, HEIGHT, isNum, latencyPanel, nums, obj, roundRates, rowBars, WIDTH, type Json, type Spec, type Title } from './chart-parts';

/** The charts of bench:coalesce and bench:ingress (see tools/bench/chart-specs.ts). */

export const coalesce = (r: Json): Spec[] => {
  if (isNum(r.coalescePerS)) return coalesceAgainstRaw(r);
  const hot = obj(r.hotKey);
  const many = obj(r.manyKeys);
  const rss = obj(r.rssMb);
  const manyKeys = `${String(many.keys)} wake keys × ${String(many.eventsPerKey)} events`;
  return [
    ...hotKeyPanels(hot),
    rowBars(['Events per second', `one hot wake key, then ${manyKeys}, key after key`], 'events per second', [
      ...bar('one hot wake key: offered', 'offered', hot.offeredPerSecond),
      ...bar('one hot wake key: answered', 'achieved (answered)', hot.achievedPerSecond),
      ...bar(`${manyKeys}: answered`, 'achieved (answered)', many.achievedPerSecond),
    ]),
    latencyPanel(
      ['Time to answer an offer'],
      [
        { name: 'one hot wake key', stats: obj(hot.answerMs) },
        { name: manyKeys, stats: obj(many.answerMs) },
      ],
    ),
    groupedBars(['RSS of the benchmark process', 'the gate and the worker'], 'MB', [
      ...bar('before', 'RSS', rss.before),
      ...bar('after the hot key', 'RSS', rss.afterHotKey),
      ...bar('after the many keys', 'RSS', rss.afterManyKeys),
    ]),
  ];
};

/**
 * A results file with raw starts measured beside the many keys (`coalescePerS`): the many keys
 * against raw starts, then the hot key offered open loop, RSS warm and at the end, and the updates
 * the server refused with its in-flight limit.
 */
function coalesceAgainstRaw(r: Json): Spec[] {
  const hot = obj(r.hotKey);
  const many = obj(r.manyKeys);
  const rss = obj(r.rssMb);
  const manyKeys = `${String(many.keys)} wake keys × ${String(many.eventsPerKey)} events`;
  const perRound = obj(many.perRound);
  return [
    roundRates(
      ['Coalescing over many wake keys against raw starts', `${manyKeys}; coalescing / raw: ${String(r.ratio)} on the totals`],
      'events or starts per second',
      { name: 'raw client.workflow.start, unique IDs', rounds: perRound.raw, total: r.rawStartsPerS },
      { name: 'coalescing offers through the gate, answered', rounds: perRound.coalesce, total: r.coalescePerS },
    ),
    ...oneEventPerKeyPanel(obj(r.oneEventPerKey)),
    ...hotKeyPanels({ ...hot, offered: hot.events, runsStarted: hot.runs, runBound: hot.bound }, 'ceil(seconds / maxWait) + 1'),
    rowBars(['One hot wake key: events per second', `${String(hot.events)} offered open loop; all answered in ${String(hot.seconds)} s`], 'events per second', [
      ...bar('offered', 'offered', hot.offeredPerS),
      ...bar('answered', 'answered', hot.answeredPerS),
    ]),
    latencyPanel(
      ['Time to answer an offer'],
      [
        { name: 'one hot wake key', stats: obj(hot.answerMs) },
        { name: manyKeys, stats: obj(many.answerMs) },
      ],
    ),
    groupedBars(['RSS of the benchmark process', `the gate and the worker; updates refused with the in-flight limit: ${String(r.inFlightRefusals)}`], 'MB', [
      ...bar('warm', 'RSS', rss.warm),
      ...bar('after the many keys', 'RSS', rss.afterManyKeys),
      ...bar('at the end', 'RSS', rss.end),
    ]),
  ];
}

/** Many keys, one event each, against raw starts in the same run (files that have the phase). */
function oneEventPerKeyPanel(one: Json): Spec[] {
  if (one.ratio === undefined) return [];
  const perRound = obj(one.perRound);
  return [
    roundRates(
      ['One event per wake key against raw starts', `${String(one.keys)} wake keys × 1 event; coalescing / raw: ${String(one.ratio)} on the totals`],
      'events or starts per second',
      { name: 'raw client.workflow.start, unique IDs', rounds: perRound.raw, total: one.rawStartsPerS },
      { name: 'coalescing offers through the gate, answered', rounds: perRound.coalesce, total: one.coalescePerS },
    ),
  ];
}

/** The hot key: its answers per second by decision and each run it started, over time (where the file has a timeline); its decisions; its runs against the bound. */
function hotKeyPanels(hot: Json, boundIs = 'seconds / maxWait + 1'): Spec[] {
  const t = obj(hot.timeline);
  const perSecond = obj(t.answersPerSecond);
  const runs = (Array.isArray(t.runs) ? t.runs : []) as Json[];
  const decisions = rowBars(['One hot wake key: its decisions', `${String(hot.offered)} distinct events offered`], 'events', [
    ...Object.entries(obj(hot.decisions)).flatMap(([d, n]) => bar(d, 'events', n)),
  ]);
  const bound = rowBars(
    [
      'One hot wake key: runs started',
      `against the bound of ${boundIs}`,
      ...(Object.keys(perSecond).length ? [] : ['this results file has no timeline of them']),
    ],
    'runs',
    [...bar('runs started', 'runs started', hot.runsStarted), ...bar('bound', 'bound', hot.runBound)],
  );
  if (!Object.keys(perSecond).length) return [decisions, bound];
  const names = Object.keys(perSecond);
  const answers = names.flatMap((decision) => nums(perSecond[decision]).flatMap((n, s) => (n ? [{ decision, s, s1: s + 1, n }] : [])));
  const end = Math.max(...answers.map((a) => a.s1), ...runs.map((x) => (isNum(x.endS) ? x.endS : 0)), 1);
  const x = { field: 's', type: 'quantitative', title: 'seconds since the first offer', scale: { domain: [0, Math.ceil(end)] } };
  return [
    {
      title: heading(['One hot wake key over time', 'offers answered per second, by decision']),
      width: WIDTH,
      height: HEIGHT,
      data: { values: answers },
      mark: 'bar',
      encoding: {
        // Pre-binned seconds: bars from s to s + 1, stacked by decision.
        x: { ...x, bin: { binned: true, step: 1 } },
        x2: { field: 's1' },
        y: { field: 'n', type: 'quantitative', title: 'answers per second', stack: 'zero' },
        color: { field: 'decision', type: 'nominal', sort: names, title: null, legend: { orient: 'top', direction: 'horizontal' } },
      },
    },
    {
      title: heading(['Its runs over time', `${runs.length} run(s), each from its start to its end; bound ${String(hot.runBound)}`]),
      width: WIDTH,
      height: Math.max(40, 14 * runs.length),
      data: { values: runs.map((x, i) => ({ run: `run ${i + 1}`, s: x.startS, s1: isNum(x.endS) ? x.endS : end })) },
      mark: { type: 'bar', color: '#6a3d9a' },
      encoding: { x, x2: { field: 's1' }, y: { field: 'run', type: 'nominal', title: null, sort: null } },
    },
    decisions,
    bound,
  ];
}

export const ingress = (r: Json): Spec[] => {
  const lat = obj(r.latencyMs);
  const perRound = obj(r.perRound);
  const queue = obj(r.queue);
  const burst = obj(r.burst);
  const rss = obj(burst.rssMb);
  const raw = isNum(r.bareStartsPerSecond) ? 'raw client.workflow.start of the same run (its worker up)' : 'raw client.workflow.start, unique IDs';
  const webhook = isNum(r.coalescingRatio)
    ? 'signed webhook → 202, one-call agent (verify, parse, gate, start)'
    : 'signed webhook → 202 (verify, parse, gate, start)';
  const samples = nums(rss.samples);
  const rssTitle: Title = ['RSS of the ingress process', `during a sustained ${String(burst.seconds)} s burst; flat: nothing buffers`];
  const rssPanel: Spec = samples.length
    ? {
        title: heading(rssTitle),
        width: WIDTH,
        height: HEIGHT,
        data: { values: samples.map((mb, i) => ({ s: (i * (isNum(rss.sampleEveryMs) ? rss.sampleEveryMs : 250)) / 1000, mb })) },
        mark: 'line',
        encoding: { x: { field: 's', type: 'quantitative', title: 'seconds into the burst' }, y: { field: 'mb', type: 'quantitative', title: 'RSS, MB' } },
      }
    : groupedBars(rssTitle, 'MB', [
        ...bar('at the start', 'RSS', rss.start),
        ...bar('mean, first third', 'RSS', rss.firstThirdMean),
        ...bar('mean, last third', 'RSS', rss.lastThirdMean),
        ...bar('max', 'RSS', rss.max),
      ]);
  // A file with the coalescing source beside the one-call one (workers up) draws it as a third series.
  const coalescing = isNum(r.coalescingRatio) ? 'signed webhook → 202, coalescing agent (its decision, the worker up)' : undefined;
  const ratios = `webhook / raw: ${String(r.ratio)}${coalescing ? `, coalescing webhook / raw: ${String(r.coalescingRatio)}` : ''} on the totals`;
  return [
    roundRates(
      ['Accepts per second at the same concurrency', ratios],
      'accepted per second',
      { name: raw, rounds: perRound.raw, total: r.rawStartsPerSecond },
      { name: webhook, rounds: perRound.webhook, total: r.webhookAcceptsPerSecond },
      ...(coalescing ? [{ name: coalescing, rounds: perRound.coalescing, total: r.coalescingAcceptsPerSecond }] : []),
    ),
    latencyPanel(
      ['Time to accept, one call'],
      [
        { name: raw, stats: obj(lat.raw) },
        { name: webhook, stats: obj(lat.webhook) },
        ...(coalescing ? [{ name: coalescing, stats: obj(lat.coalescing) }] : []),
      ],
    ),
    rowBars(['A queue backlog and a webhook burst', 'the queue drained by one consumer; webhooks sustained'], 'accepted per second', [
      ...bar(`queue: ${String(queue.messages)} messages`, 'accepted and acked', queue.acceptedPerSecond),
      ...bar(`webhooks: a ${String(burst.seconds)} s burst`, 'accepted (202)', burst.acceptedPerSecond),
    ]),
    rssPanel,
  ];
};
