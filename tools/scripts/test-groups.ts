import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The test files and their groups, and the durations file `npm test` writes. A test file's group is
 * the folder under test/ it sits in, named for what the file starts; `npm test` runs the groups in
 * this order, the fast ones first. test/unit/docs.test.ts holds each file's imports to its folder.
 */
export const GROUPS = ['unit', 'time-skipping', 'dev-server', 'processes'] as const;
export type Group = (typeof GROUPS)[number];

/** What the files of a group start, in words. */
export const STARTS: Record<Group, string> = {
  unit: 'no server',
  'time-skipping': "Temporal's time-skipping test server",
  'dev-server': 'a Temporal dev server',
  processes: 'real processes besides a dev server: workers, ingresses or queue consumers to SIGKILL, the soak, or a browser',
};

/**
 * How `npm test` runs the files: in phases, one after another; a phase's *lanes* run side by side,
 * each a node:test runner taking its files one at a time, in path order (the runner sorts them).
 * On 2 cores, two phases:
 * 1. two lanes: the first takes the unit files and every processes file (they kill and restart
 *    workers and servers at chosen moments: in one lane, no two of them ever run at once); the
 *    second the time-skipping files; the dev-server files, longest first by their last measured
 *    wall time, go each to the lane with less to do. A dev-server or time-skipping file mostly waits
 *    on its server, its timers and its runs (a full run's dev-server files used about 0.45 of a core
 *    each);
 * 2. the files in `ALONE` (the soak, which counts what a loaded system gets through), each with
 *    nothing beside it.
 */
export interface Phase {
  lanes: string[][];
}

/** Files that run with nothing beside them: their thresholds count throughput. */
export const ALONE = ['test/processes/soak.test.ts'];

/** The phases for these files (in `byGroup` order), each file's weight its last measured wall time (a minute when unmeasured). */
export function phasesOf(files: string[], msOf: (file: string) => number | undefined): Phase[] {
  const weight = (f: string) => msOf(f) ?? 60_000;
  const longestFirst = (a: string, b: string) => weight(b) - weight(a) || byGroup(a, b);
  const of = (g: Group) => files.filter((f) => groupOf(f) === g && !ALONE.includes(f));
  const sum = (l: string[]) => l.reduce((n, f) => n + weight(f), 0);
  // The unit files, then every processes file, in the first lane; the time-skipping files in the
  // second; the dev-server files, longest first, each to the lane with less to do.
  const lanes: string[][] = [[...of('unit'), ...of('processes').sort(longestFirst)], of('time-skipping')];
  const load = lanes.map(sum);
  for (const f of [...of('dev-server'), ...files.filter((x) => groupOf(x) === undefined)].sort(longestFirst)) {
    const i = load[0]! <= load[1]! ? 0 : 1;
    lanes[i]!.push(f);
    load[i]! += weight(f);
  }
  const phases: Phase[] = [{ lanes }];
  phases.push(...files.filter((f) => ALONE.includes(f)).map((f) => ({ lanes: [[f]] })));
  return phases.map((p) => ({ lanes: p.lanes.filter((l) => l.length > 0) })).filter((p) => p.lanes.length > 0);
}

/** The group of a test file given from the project root (`test/<group>/x.test.ts`); undefined outside the group folders. */
export function groupOf(file: string): Group | undefined {
  const [top, folder, ...rest] = file.split(/[\\/]/);
  return top === 'test' && rest.length > 0 && (GROUPS as readonly string[]).includes(folder!) ? (folder as Group) : undefined;
}

const rank = (file: string) => {
  const g = groupOf(file);
  return g ? GROUPS.indexOf(g) : GROUPS.length;
};

/** Test files in run order: by group as GROUPS lists them, then by path; a file in no group folder last. */
export const byGroup = (a: string, b: string) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0);

/** Every `*.test.ts` under test/, helpers and fixtures excepted: the files `npm test` runs, from the root with forward slashes, in run order. */
export function testFiles(root: string): string[] {
  const walk = (dir: string): string[] =>
    readdirSync(dir).flatMap((name) => {
      const p = path.join(dir, name);
      if (statSync(p).isDirectory()) return name === 'helpers' || name === 'fixtures' ? [] : walk(p);
      return name.endsWith('.test.ts') ? [p] : [];
    });
  return walk(path.join(root, 'test'))
    .map((p) => path.relative(root, p).split(path.sep).join('/'))
    .sort(byGroup);
}

/** One test file's last measured run: its wall time under `npm test` (its own process, servers started and stopped included). */
export interface FileDuration {
  file: string;
  group: Group | 'none';
  ms: number;
  passed: boolean;
  /** When the run that measured it started (ISO, UTC). */
  at: string;
  /** The machine's core count. */
  cpus: number;
  node: string;
  /** The command that ran it: `npm test`, or `npm test -- <filters>` for a subset. */
  command: string;
}

export interface DurationsFile {
  about: string;
  files: FileDuration[];
}

export const DURATIONS = path.join('test', 'results', 'durations.json');

export function readDurations(root: string): DurationsFile | undefined {
  const file = path.join(root, DURATIONS);
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as DurationsFile) : undefined;
}

/**
 * Put a run's measurements in the durations file: each file it ran gets its entry anew, the entries
 * of files it did not run stay as they were (a full run thus rewrites them all), and entries of
 * files that no longer exist go. Returns the path written.
 */
export function writeDurations(root: string, measured: FileDuration[]): string {
  const present = new Set(testFiles(root));
  const kept = (readDurations(root)?.files ?? []).filter((d) => present.has(d.file) && !measured.some((m) => m.file === d.file));
  const out: DurationsFile = {
    about:
      'Wall time of each test file under npm test, written by tools/scripts/run-tests.ts at the end of a run: the entries of the files that run ran ' +
      '(a full run: all of them), each with when, where and by which command it was measured; shown in docs/TESTS.md by npm run docs.',
    files: [...kept, ...measured].sort((a, b) => byGroup(a.file, b.file)),
  };
  const target = path.join(root, DURATIONS);
  mkdirSync(path.dirname(target), { recursive: true });
  writeFileSync(target, `${JSON.stringify(out, null, 2)}\n`);
  return target;
}
