import type { Proposal } from '../../src/core/contracts';

/** What the commit stage carries out (or, in a shadow run, records): the staged effects, in order, and the answer that closed the loop. */
export interface Staged {
  answer: unknown;
  summary: string;
  proposals: Proposal[];
}
