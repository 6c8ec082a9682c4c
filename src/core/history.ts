/**
 * Entity workflows (a coalescer, the supervisor) continue as new once their history holds this many
 * events, well before Temporal suggests it. A worker taking one over from a killed worker replays
 * its whole history in one workflow task, and a busy worker has dozens of them to take over at once:
 * a long history then outlasts the task's 10 s timeout, and Temporal backs off before the next try.
 * In a 30-minute soak a coalescer of 3,200 events (1.1 s to replay on an idle machine) needed 48 s
 * to be taken over, and took no offer for four minutes.
 */
export const ENTITY_HISTORY_EVENTS = 1_000;
