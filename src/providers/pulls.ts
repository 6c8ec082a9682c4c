import type { OutsideConfig } from '../config/config';
import { http } from './http';

export interface PullRequestInput {
  repo: string;
  branch: string;
  title: string;
  body: string;
}

/** Opens a pull request keyed by branch: opening it again returns the open one. */
export interface PullRequestAdapter {
  open(pr: PullRequestInput, signal?: AbortSignal): Promise<{ ref: string; existed: boolean }>;
}

export function localPulls(url: string, timeoutMs: number): PullRequestAdapter {
  return {
    async open(pr, signal) {
      const res = await http({
        method: 'PUT',
        url: `${url}/repos/${encodeURIComponent(pr.repo)}/pulls/${encodeURIComponent(pr.branch)}`,
        body: { title: pr.title, body: pr.body },
        timeoutMs,
        signal,
      });
      return { ref: `#${(res.json as { number: number }).number}`, existed: res.status === 200 };
    },
  };
}

/**
 * GitHub's REST API: look for an open PR with this head branch first, create it only if there is
 * none, and on GitHub's 422 "already exists" (a race with another run) look again. The branch with
 * the bump commit must already be pushed; pushing it is not this adapter's job.
 */
export function githubPulls(apiUrl: string, token: string, base: string, timeoutMs: number): PullRequestAdapter {
  const headers = { authorization: `Bearer ${token}`, accept: 'application/vnd.github+json', 'x-github-api-version': '2022-11-28' };
  const findOpen = async (pr: PullRequestInput, signal?: AbortSignal) => {
    const owner = pr.repo.split('/')[0];
    const res = await http({
      method: 'GET',
      url: `${apiUrl}/repos/${pr.repo}/pulls?state=open&head=${encodeURIComponent(`${owner}:${pr.branch}`)}`,
      headers,
      timeoutMs,
      signal,
    });
    const hit = (res.json as { number: number }[])[0];
    return hit ? `#${hit.number}` : undefined;
  };
  return {
    async open(pr, signal) {
      const existing = await findOpen(pr, signal);
      if (existing) return { ref: existing, existed: true };
      try {
        const res = await http({
          method: 'POST',
          url: `${apiUrl}/repos/${pr.repo}/pulls`,
          headers,
          body: { title: pr.title, body: pr.body, head: pr.branch, base },
          timeoutMs,
          signal,
        });
        return { ref: `#${(res.json as { number: number }).number}`, existed: false };
      } catch (err) {
        const again = await findOpen(pr, signal);
        if (again) return { ref: again, existed: true };
        throw err;
      }
    },
  };
}

export function pullRequestAdapter(o: OutsideConfig): PullRequestAdapter {
  return o.pulls.adapter === 'github' ? githubPulls(o.pulls.url, o.pulls.token, o.pulls.base, o.httpTimeoutMs) : localPulls(o.pulls.url, o.httpTimeoutMs);
}
