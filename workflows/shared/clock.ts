/**
 * Workflow time: inside a workflow, the SDK sets `Date` to the start of the current workflow task,
 * read from history on replay, so it is deterministic. Every workflow reads the clock here; the
 * lint rule against `Date.now()` in workflows is lifted for this one line.
 */
// eslint-disable-next-line no-restricted-syntax
export const workflowNow = (): number => Date.now();
