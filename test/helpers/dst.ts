/**
 * Pure wall-clock arithmetic for DST reasoning, with the platform's IANA data (Intl): what the
 * schedule tests expect of a local-time schedule's transition days (test/dev-server/schedules-dst.test.ts),
 * itself tested on a repeated and a skipped hour (test/unit/schedule-definition.test.ts).
 */

/** The zone's offset from UTC at `utcMs`, in minutes (e.g. -240 for EDT). */
export function offsetMinutes(zone: string, utcMs: number): number {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: zone,
    hourCycle: 'h23',
    year: 'numeric',
    month: 'numeric',
    day: 'numeric',
    hour: 'numeric',
    minute: 'numeric',
    second: 'numeric',
  }).formatToParts(new Date(utcMs));
  const get = (t: string) => Number(parts.find((p) => p.type === t)?.value);
  const asUtc = Date.UTC(get('year'), get('month') - 1, get('day'), get('hour'), get('minute'), get('second'));
  return Math.round((asUtc - Math.floor(utcMs / 1000) * 1000) / 60_000);
}

export interface WallTime {
  year: number;
  /** 1-12 */
  month: number;
  day: number;
  hour: number;
  minute: number;
}

/**
 * Every UTC instant at which `zone`'s clocks show `wall`: one on an ordinary day, two when a
 * fall-back transition repeats it, none when a spring-forward transition skips it. Sorted.
 */
export function instantsOfWallTime(zone: string, wall: WallTime): number[] {
  const naive = Date.UTC(wall.year, wall.month - 1, wall.day, wall.hour, wall.minute);
  // Any real offset is within +-14 h; try the offsets in force around that day.
  const candidates = new Set<number>();
  for (let h = -15; h <= 15; h += 1) candidates.add(offsetMinutes(zone, naive + h * 3_600_000));
  const hits = [...candidates].map((off) => naive - off * 60_000).filter((utc) => offsetMinutes(zone, utc) * 60_000 === naive - utc);
  return [...new Set(hits)].sort((a, b) => a - b);
}

/** How a DST transition treats one wall time: `repeated` (two instants), `skipped` (none) or `normal`. */
export function wallTimeKind(zone: string, wall: WallTime): 'normal' | 'repeated' | 'skipped' {
  const n = instantsOfWallTime(zone, wall).length;
  return n === 0 ? 'skipped' : n === 1 ? 'normal' : 'repeated';
}
