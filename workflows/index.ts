// The one workflow bundle entry.
export { runWorkflow } from './run/workflow';
export { coalescerWorkflow } from './coalescer/workflow';
export { scheduleTickWorkflow } from './schedule/tick';
export { scheduleLedgerWorkflow } from './schedule/ledger';
export { fixedDelayWorkflow } from './schedule/fixed-delay';
export { subagentWorkflow } from './run/subagent';
export { supervisorWorkflow } from './supervisor/workflow';
