import { ApplicationFailure } from '@temporalio/common';
import { FailureType } from '../core/failures';

export interface HttpRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH';
  url: string;
  headers?: Record<string, string>;
  body?: unknown;
  timeoutMs: number;
  signal?: AbortSignal;
}

export interface HttpResponse {
  status: number;
  headers: Headers;
  json: unknown;
}

/**
 * One provider call, classified the way Temporal's retries need it: 429 → retryable with the
 * provider's `Retry-After` as the next delay; other 4xx → non-retryable (`ProviderRejected`);
 * 5xx, timeouts and connection errors → thrown plainly, so the activity's retry policy retries.
 */
export async function http(req: HttpRequest): Promise<HttpResponse> {
  const signals = [AbortSignal.timeout(req.timeoutMs), ...(req.signal ? [req.signal] : [])];
  const res = await fetch(req.url, {
    method: req.method,
    headers: { ...(req.body !== undefined ? { 'content-type': 'application/json' } : {}), ...req.headers },
    body: req.body === undefined ? undefined : JSON.stringify(req.body),
    signal: AbortSignal.any(signals),
  });
  const text = await res.text();
  let json: unknown = text;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    // not JSON (Slack answers "ok")
  }
  if (res.status === 429) {
    const after = Number(res.headers.get('retry-after'));
    throw ApplicationFailure.create({
      type: FailureType.RateLimited,
      message: `${req.method} ${req.url}: 429`,
      nextRetryDelay: Number.isFinite(after) && after > 0 ? after * 1000 : undefined,
    });
  }
  if (res.status >= 400 && res.status < 500 && res.status !== 408) {
    throw ApplicationFailure.nonRetryable(`${req.method} ${req.url}: ${res.status} ${text.slice(0, 200)}`, FailureType.ProviderRejected);
  }
  if (res.status >= 400) throw new Error(`${req.method} ${req.url}: ${res.status} ${text.slice(0, 200)}`);
  return { status: res.status, headers: res.headers, json };
}
