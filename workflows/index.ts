// The one workflow bundle entry.
export { wakeWorkflow } from './wake';
export { admissionWorkflow } from './admission';
export { coalescerWorkflow } from './coalescer';
export { scheduleTickWorkflow } from './schedule-tick';
export { scheduleLedgerWorkflow } from './schedule-ledger';
export { fixedDelayWorkflow } from './fixed-delay';
export { subagentWorkflow } from './subagent';
