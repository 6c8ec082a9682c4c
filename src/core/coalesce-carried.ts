import { BATCH_BUDGET_CHARS } from './coalesce-batch';

/*
 * What a coalescer carries across continue-as-new, bounded as a whole: its input (the state, with
 * the agent, wake key and policy) is at most CARRIED_BUDGET_BYTES of JSON, under the SDK's payload
 * warning (TMPRL1103: 512 KiB, measured on the whole encoded Payloads of the command, which adds a
 * few dozen bytes of metadata and framing). Where the room goes, its shares:
 *
 * | part | share | its own rule |
 * |---|---|---|
 * | the pending batch's events, and the live run's | BATCH_BUDGET_CHARS each | src/core/coalesce-batch.ts `fitInto`, `hasRoom` |
 * | answers kept for retried offers | ANSWERS_SHARE | workflows/coalescer/answers.ts `remember` |
 * | the rest: runs (10), stale records (20), versions, counts, identity | OTHER_SHARE | machine.ts |
 * | the seen table | SEEN_SHARE, what is left | workflows/coalescer/seen.ts (SEEN_BUDGET_CHARS) |
 *
 * The seen table is the one that gives way: at the turn it takes what the rest leaves, at most its
 * share (workflows/coalescer/carry.ts `carriedInput`), so the whole is bounded by construction, but
 * for one case: the live run and the pending batch each keep their newest event whatever its size, so
 * two events near the gate's 256 KiB outgrow the bound alone; the table is then given up whole and
 * the input is those events (far under Temporal's 2 MB; the SDK warns). The live run's events are
 * never dropped to fit: they answer its redeliveries after the table let their rows go. Its
 * stated capacity (SEEN_CAPACITY) is for its share; an event past the batch budget (the newest is
 * always kept, and the gate takes payloads up to 256 KiB), a steered live run's events beside a
 * follow-up batch, or parts past their share take their room from it: its oldest entries then leave
 * early, counted (`forgottenEarly`) and stated by the trail.
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
/** The seen table's share: what the others leave (388,000). */
export const SEEN_SHARE = CARRIED_BUDGET_BYTES - BATCH_BUDGET_CHARS - ANSWERS_SHARE - OTHER_SHARE;
