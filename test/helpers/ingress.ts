import { Webhook } from 'standardwebhooks';
import type { IngressConfig } from '../../src/config/config';
import { loadConfig } from '../../src/config/config';
import type { AgentRegistry } from '../../src/agents/registry';
import { oneCallAgents } from './agents';
import { startIngress, type RunningIngress } from '../../src/processes/ingress-listeners';
import { githubSign } from './github-sign';
import { campaignsSource } from '../../examples/campaigns-webhook';
import { githubSource } from '../../examples/github-webhook';
import type { DevEnv } from './env';
import { appOf } from './app';

/** The secrets the tests sign with (each source's documented dev secret). */
export const CAMPAIGNS_SECRET = campaignsSource.devSecret;
export const GITHUB_SECRET = githubSource.devSecret;

/**
 * An ingress on a free port in front of the test's dev server, with the default settings unless
 * overridden; its agents on the one-call path unless given (these tests are about the ingress).
 */
export async function startTestIngress(
  env: DevEnv,
  taskQueue: string,
  overrides: Partial<IngressConfig> = {},
  agents: AgentRegistry = oneCallAgents(),
): Promise<RunningIngress> {
  const config = { ...loadConfig({}).ingress, port: 0, host: '127.0.0.1', operatorPort: 0, ...overrides };
  const app = appOf(agents);
  return startIngress({ client: env.client, taskQueue, registry: app.registry, sources: app.webhookSources, config, allowDevSecrets: true });
}

/** Standard Webhooks headers for `body`, as the sender computes them (`at` = signing time). */
export function standardHeaders(body: string, id: string, at: Date = new Date(), secret = CAMPAIGNS_SECRET): Record<string, string> {
  return {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(secret).sign(id, at, body),
  };
}

/** GitHub's headers for a delivery of `event` with `body`. */
export async function githubHeaders(body: string, event: string, delivery: string, secret = GITHUB_SECRET): Promise<Record<string, string>> {
  return {
    'content-type': 'application/json',
    'x-github-event': event,
    'x-github-delivery': delivery,
    'x-hub-signature-256': await githubSign(secret, body),
  };
}

export interface Answer {
  status: number;
  retryAfter: string | null;
  json: Record<string, unknown> & { decision?: string; runKey?: string; runId?: string; error?: { code: string; message: string } };
}

/** POST and read the JSON answer. */
export async function post(url: string, body: string | Buffer, headers: Record<string, string>): Promise<Answer> {
  const res = await fetch(url, { method: 'POST', body, headers });
  const text = await res.text();
  let json: Answer['json'];
  try {
    json = JSON.parse(text);
  } catch {
    json = { raw: text };
  }
  return { status: res.status, retryAfter: res.headers.get('retry-after'), json };
}

/** A campaigns body as the campaign service sends it. */
export const campaignBody = (campaignId: string, over: Record<string, unknown> = {}): string =>
  JSON.stringify({ type: 'config.changed', campaignId, occurredAt: '2026-12-02T14:05:00Z', version: 7, dashboards: ['reach', 'spend'], ...over });

/** A GitHub `release` body (action published). */
export const releaseBody = (upstream: string, tag: string, over: Record<string, unknown> = {}): string =>
  JSON.stringify({
    action: 'published',
    release: { tag_name: tag, published_at: '2026-12-02T09:00:00Z', id: 1 },
    repository: { full_name: upstream, name: upstream.split('/')[1] },
    ...over,
  });
