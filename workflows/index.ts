// The one workflow bundle entry.
export { wakeWorkflow } from './wake';
export { subagentWorkflow } from './subagent';
