import { BATCH_BUDGET_CHARS } from './coalesce-batch';

/*
 * What a coalescer carries across continue-as-new, bounded as a whole: its input (the state, with
 * the agent, wake key and policy) is at most CARRIED_BUDGET_BYTES of JSON, under the SDK's payload
 * warning (TMPRL1103: 512 KiB, measured on the whole encoded Payloads of the command, which adds a
 * few dozen bytes of metadata and framing). Where the room goes, its shares:
 *
 * | part | share | its own rule |
 * |---|---|---|
 * | the pending batch's events | BATCH_BUDGET_CHARS | src/core/coalesce-batch.ts `fitInto` |
 * | the live run's events, by their keys (workflows/coalescer/carry.ts `carriedRuns`) | from the slack of the others' | `hasRoom`, carry.ts |
 * | answers kept for retried offers | ANSWERS_SHARE | workflows/coalescer/answers.ts `remember` |
 * | the rest: runs (10), stale records (20), versions, counts, identity | OTHER_SHARE | machine.ts |
 * | the seen table | SEEN_SHARE, what is left | workflows/coalescer/seen.ts (SEEN_BUDGET_CHARS) |
 *
 * The live run's events and the foreign runs' (live runs of chains terminated by hand, at most 10)
 * cross by their key, fingerprint and delivery ids only, but for their steered events, and under
 * overlap `cancel` the live run's whole until a restart holds its own copies: never dropped to fit,
 * they answer their redeliveries after the table let their rows go. In bench:coalesce's hot-key
 * stream under `buffer_one` (10,000 events, as the unit test drives it) the live run's took 26,554
 * bytes at most, taken from the answers' and the rest's slack: all 10,000 were held.
 *
 * The seen table is the one that gives way: at the turn it takes what the rest leaves, at most its
 * share and never less than SEEN_LEAST_SHARE (workflows/coalescer/carry.ts `carriedInput`). That is
 * room for the largest event the gate takes in the pending batch (or in a live run under `cancel`,
 * no batch waiting) beside a live run's events within BATCH_BUDGET_CHARS, so the whole is bounded
 * for keys up to 100 characters, but for one case: foreign runs, each up to BATCH_BUDGET_CHARS, may
 * take the input past it, to about 1,080,000 bytes (under Temporal's 2 MiB; the SDK warns). The
 * delivery ids redeliveries add to a run's events count on top. The table's stated capacity
 * (SEEN_CAPACITY) is for its share; an event past the batch budget, a steered live run's events
 * beside a follow-up batch, or parts past their share take their room from it: its oldest entries
 * then leave early, counted (`forgottenEarly`) and stated by the trail.
 */

/** JSON bytes of the continue-as-new input at most (test/unit/coalesce-carried.test.ts holds it for any stream). */
export const CARRIED_BUDGET_BYTES = 480_000;
/** Answers kept whole for retried offers the seen table cannot answer again, at most this many. */
export const RECENT_ANSWERS = 500;
/** JSON bytes of the answers kept whole (`recent`) at most. */
export const RECENT_ANSWER_BYTES = 8_000;
/** JSON bytes of one first decision's answer kept (`firstAnswers`, at most RECENT_ANSWERS of them), whatever its offer id. */
export const FIRST_ANSWER_BYTES = 24;
/** The answers' share. */
export const ANSWERS_SHARE = RECENT_ANSWER_BYTES + RECENT_ANSWERS * FIRST_ANSWER_BYTES;
/** The rest's share, for keys up to 100 characters: 10 runs, 20 stale records, a few sources' versions, the counts, the agent, wake key and policy. */
export const OTHER_SHARE = 12_000;
/** The seen table's share: what the batch, the answers and the rest leave (388,000). */
export const SEEN_SHARE = CARRIED_BUDGET_BYTES - BATCH_BUDGET_CHARS - ANSWERS_SHARE - OTHER_SHARE;
/** JSON bytes of the largest event: the gate's largest payload (src/gate/limits.ts, 256 KiB) and its key and facts. */
export const LARGEST_EVENT_BYTES = 256 * 1024 + 2_000;
/** What the seen table keeps at the least, whatever the rest holds (123,856): its room beside the largest event and a live run's events. */
export const SEEN_LEAST_SHARE = CARRIED_BUDGET_BYTES - LARGEST_EVENT_BYTES - BATCH_BUDGET_CHARS - ANSWERS_SHARE - OTHER_SHARE;
