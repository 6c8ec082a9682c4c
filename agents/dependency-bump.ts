import { defineAgent } from './definition';

/**
 * The seed's dependency-bump agent: when a newer version of a dependency is out, open one pull
 * request for the bump, keyed by its branch name (`bump/<package>-<version>`), so a duplicate wake
 * finds the PR already open. Nothing newer → `no_op` before any model call.
 */
export const dependencyBump = defineAgent({
  name: 'dependency-bump',
  description: 'Opens one pull request per dependency bump, keyed by branch name.',
  triggers: ['deps'],
  systemPrompt:
    'You bump one dependency. Check it, then answer with JSON {"decision":"commit"|"no_op","summary":"..."} ' +
    'where summary is the pull request description.',
  model: { maxOutputTokens: 300, inputUsdPerMTok: 2.5, outputUsdPerMTok: 10 },
  budget: { turns: 4, tokens: 20_000, toolCalls: 6, wallClock: '10m', costUsd: 0.25 },
  tools: [{ name: 'check_dependency', kind: 'dependency_check', description: 'Compare the current and the latest version of a package.' }],
  precheck: 'check_dependency',
  effects: [
    { name: 'open_pull_request', kind: 'pull_request', class: 'idempotent', reversible: true, description: 'Open the bump PR (by branch name).' },
  ],
  approval: { irreversible: 'required', timeout: '5m' },
});
