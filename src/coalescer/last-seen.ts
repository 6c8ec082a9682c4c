/**
 * When this process last saw each of many IDs, kept in order of last sight and bounded: past `max`
 * entries the least recently seen are forgotten, except those seen within `keepWithinMs` (a
 * forgotten one costs its owner a call it could have skipped, never a wrong answer). The gate keeps
 * two: the coalescers it saw open, and those that answered it lately.
 */
export class LastSeen {
  private readonly at = new Map<string, number>();

  constructor(
    private readonly max: number,
    private readonly keepWithinMs = 0,
  ) {}

  /** Seen now. */
  note(id: string): void {
    const now = Date.now();
    this.at.delete(id); // re-inserted last: the map stays in order of last sight
    this.at.set(id, now);
    if (this.at.size <= this.max) return;
    for (const [oldest, seen] of this.at) {
      if (this.at.size <= this.max || now - seen < this.keepWithinMs) break;
      this.at.delete(oldest);
    }
  }

  /** Seen within the last `ms` (and not forgotten since). */
  within(id: string, ms: number): boolean {
    const seen = this.at.get(id);
    return seen !== undefined && Date.now() - seen < ms;
  }

  get size(): number {
    return this.at.size;
  }
}
