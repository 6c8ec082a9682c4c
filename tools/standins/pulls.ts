import Fastify, { type FastifyInstance } from 'fastify';

export interface PullRequest {
  number: number;
  repo: string;
  branch: string;
  title: string;
  body: string;
}

/**
 * Stand-in for a code host's pull requests, keyed by (repo, branch): `PUT /repos/:repo/pulls/:branch`
 * opens the PR or returns the open one (200 vs 201), so opening a PR is idempotent by construction.
 */
export function pullRequestService(): { app: FastifyInstance; pulls: PullRequest[]; creates: () => number } {
  const app = Fastify();
  const pulls: PullRequest[] = [];
  app.put<{ Params: { repo: string; branch: string }; Body: { title?: string; body?: string } }>('/repos/:repo/pulls/:branch', async (req, reply) => {
    const { repo, branch } = req.params;
    const open = pulls.find((p) => p.repo === repo && p.branch === branch);
    if (open) return reply.code(200).send(open);
    const pr: PullRequest = { number: pulls.length + 1, repo, branch, title: req.body?.title ?? branch, body: req.body?.body ?? '' };
    pulls.push(pr);
    return reply.code(201).send(pr);
  });
  app.get('/pulls', async () => pulls);
  return { app, pulls, creates: () => pulls.length };
}
