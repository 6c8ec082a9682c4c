import { z } from 'zod';
import { defineAgent, defineEffect, defineTool, pullRequestAdapter } from 'wakegate';

const Bump = z.object({
  repo: z.string().min(1).max(200),
  package: z.string().min(1).max(200),
  from: z.string().min(1).max(50),
  to: z.string().min(1).max(50),
});

/** Open a pull request, keyed by its branch: opening it again finds the open one (idempotent by construction). */
export const openPullRequest = defineEffect({
  name: 'open_pull_request',
  description: 'Open the bump PR (by branch name).',
  class: 'idempotent',
  reversible: true,
  input: z.object({ repo: z.string().min(1), branch: z.string().min(1), title: z.string().min(1), body: z.string() }),
  apply: async (pr, { outside, signal }) => {
    const r = await pullRequestAdapter(outside).open(pr, signal);
    return { ref: r.ref, existed: r.existed };
  },
});

/**
 * The seed's dependency-bump agent: when a newer version of a dependency is out, open one pull
 * request for the bump, keyed by its branch name (`bump/<package>-<version>`), so a duplicate wake
 * finds the PR already open. Nothing newer → `no_op` before any model turn.
 */
export const dependencyBump = defineAgent({
  name: 'dependency-bump',
  description: 'Opens one pull request per dependency bump, keyed by branch name.',
  triggers: ['deps'],
  wakeKey: (event) => `${String(event.payload.repo)}:${String(event.payload.package)}`,
  wakeKeyRationale:
    'One wake per (repository, package): release notices and checks about one dependency of one repo are one piece of work; ' +
    'a release that lands while a bump runs gets one follow-up run on the newest version.',
  coalesce: { debounce: { period: '2s', maxWait: '30s' }, whileRunning: 'buffer_one' },
  payload: Bump.passthrough(),
  systemPrompt:
    'You bump one dependency. Check it, then answer with JSON {"conclusion":"commit"|"no_op","summary":"..."} ' +
    'where summary is the pull request description.',
  model: { maxOutputTokens: 300, inputUsdPerMTok: 2.5, outputUsdPerMTok: 10 },
  budget: { turns: 4, tokens: 20_000, toolCalls: 6, wallClock: '10m', costUsd: 0.25 },
  tools: [
    defineTool({
      name: 'check_dependency',
      description: 'Compare the current and the latest version of a package.',
      run: async (_args, { input }) => {
        const { package: pkg, from, to } = Bump.parse(input.payload);
        const changed = from !== to;
        return {
          content: JSON.stringify({ changed, headline: changed ? `bump ${pkg} from ${from} to ${to}` : `${pkg} is already at ${to}` }),
          changed,
          nothingToDo: !changed,
        };
      },
    }),
  ],
  precheck: 'check_dependency',
  effects: [openPullRequest],
  decide: (answer, { run }) => {
    if (answer.conclusion === 'no_op') return { noOp: answer.summary };
    const p = Bump.parse(run.payload);
    // The branch name is the natural key: the same bump always lands on the same branch.
    return {
      summary: answer.summary,
      effects: [
        {
          effect: 'open_pull_request',
          args: { repo: p.repo, branch: `bump/${p.package}-${p.to}`, title: `Bump ${p.package} from ${p.from} to ${p.to}`, body: answer.summary },
        },
      ],
    };
  },
  approval: { irreversible: 'required', timeout: '5m' },
});
