import { Webhook } from 'standardwebhooks';
import { githubSign } from '../../test/helpers/github-sign';
import { campaignsSource } from '../../examples/campaigns-webhook';
import { githubSource } from '../../examples/github-webhook';
import { trackerSource, signTrackerDelivery } from '../../examples/incident-triage/webhook';

/** One request as a sender makes it: where, what, and how it is signed at each attempt (a retry signs again, as senders do). */
export interface Outgoing {
  path: string;
  body: string;
  headers: () => Promise<Record<string, string>>;
}

const json = { 'content-type': 'application/json' };

/** A Standard Webhooks delivery to the campaigns source, signed with its dev secret (or `secret`). */
export function campaignsDelivery(id: string, body: object, secret = campaignsSource.devSecret): Outgoing {
  const text = JSON.stringify(body);
  return {
    path: '/webhooks/campaigns',
    body: text,
    headers: async () => {
      const at = new Date();
      return {
        ...json,
        'webhook-id': id,
        'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
        'webhook-signature': new Webhook(secret).sign(id, at, text),
      };
    },
  };
}

/** A GitHub `release` delivery asking to bump `repo`'s `pkg` from `from`. */
export function githubDelivery(id: string, body: object, route: { repo: string; from: string; package: string }): Outgoing {
  const text = JSON.stringify(body);
  const q = new URLSearchParams(route).toString();
  return {
    path: `/webhooks/github?${q}`,
    body: text,
    headers: async () => ({
      ...json,
      'x-github-event': 'release',
      'x-github-delivery': id,
      'x-hub-signature-256': await githubSign(githubSource.devSecret, text),
    }),
  };
}

/** A tracker alert, signed with the tracker's own scheme. */
export function trackerDelivery(id: string, body: object): Outgoing {
  const text = JSON.stringify(body);
  return {
    path: '/webhooks/tracker',
    body: text,
    headers: async () => ({ ...json, 'x-tracker-delivery': id, 'x-tracker-signature': signTrackerDelivery(trackerSource.devSecret, text) }),
  };
}

/** The invalid input the soak trickles in: each must be refused 4xx and never accepted. */
export function invalidDelivery(n: number): { what: string; out: Outgoing } {
  const body = { type: 'config.changed', campaignId: `bad-${n}`, occurredAt: new Date().toISOString(), version: 1, dashboards: ['spend'] };
  switch (n % 4) {
    case 0:
      return {
        what: 'bad signature',
        out: campaignsDelivery(`bad-sig-${n}`, body, 'whsec_' + Buffer.from('not-the-campaigns-secret-at-all').toString('base64')),
      };
    case 1:
      return { what: 'bad payload', out: campaignsDelivery(`bad-body-${n}`, { type: 'config.changed', version: 'x' }) };
    case 2:
      return { what: 'unknown source', out: { path: '/webhooks/nowhere', body: JSON.stringify(body), headers: async () => json } };
    default: {
      const big = { ...body, dashboards: ['spend'], padding: 'x'.repeat(300 * 1024) };
      return { what: 'oversized body', out: campaignsDelivery(`bad-size-${n}`, big) };
    }
  }
}

export interface Answered {
  t: number;
  ingress: string;
  /** HTTP status; 0 when the connection failed or timed out. */
  status: number;
  retryAfter: string | null;
  json?: Record<string, unknown>;
  error?: string;
}

/** POST once to `base` (one ingress), with a timeout; a network failure is status 0. */
export async function postOnce(base: string, out: Outgoing, timeoutMs: number): Promise<Answered> {
  const t = Date.now();
  try {
    const res = await fetch(`${base}${out.path}`, { method: 'POST', body: out.body, headers: await out.headers(), signal: AbortSignal.timeout(timeoutMs) });
    const text = await res.text();
    let parsed: Record<string, unknown> | undefined;
    try {
      parsed = JSON.parse(text) as Record<string, unknown>;
    } catch {
      parsed = undefined;
    }
    return { t, ingress: base, status: res.status, retryAfter: res.headers.get('retry-after'), json: parsed };
  } catch (err) {
    return { t, ingress: base, status: 0, retryAfter: null, error: (err as Error).message };
  }
}
