import type * as OctokitMethods from '@octokit/webhooks-methods';

// @octokit/webhooks-methods is ESM only (no `require` export): loaded once, on first use.
let octokit: Promise<typeof OctokitMethods> | undefined;

/** GitHub's HMAC over `payload` (`sha256=<hex>`), as GitHub signs a delivery: for tests and the soak's senders. */
export async function githubSign(secret: string, payload: string): Promise<string> {
  octokit ??= import('@octokit/webhooks-methods');
  return (await octokit).sign(secret, payload);
}
