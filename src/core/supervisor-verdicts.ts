/**
 * What the supervisor (workflows/supervisor/) tells a run: whether it may start, and where it was
 * held. Plain JSON, on the run's status and result.
 */

/** What the run's first step (and a held run's re-check) is told. */
export type RunVerdict =
  | { kind: 'run'; releasedBy?: { who: string; reason: string } }
  | { kind: 'hold'; hold: 'halted' | 'cap'; reason: string; recheckMs: number }
  | { kind: 'discard'; who: string; reason: string };

/** Where the supervisor held a run, and who let it go (on the run's status and result). */
export interface HoldRecord {
  hold: 'halted' | 'cap';
  reason: string;
  heldAt: string;
  /** How often the run continued as new while held (its history kept short over a long hold). */
  continuedAsNew?: number;
  releasedAt?: string;
  releasedBy?: { who: string; reason: string };
}
