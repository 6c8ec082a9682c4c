// The one workflow bundle entry.
export { wakeWorkflow } from './wake';
export { scheduleTickWorkflow } from './schedule-tick';
export { scheduleLedgerWorkflow } from './schedule-ledger';
export { fixedDelayWorkflow } from './fixed-delay';
export { subagentWorkflow } from './subagent';
