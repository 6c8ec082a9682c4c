import { z } from 'zod';
import { http } from '../providers/http';
import type { PageRequest } from '../core/supervisor-types';

/** One page: `dedupKey` makes repeats of the same trip one incident (PagerDuty's `dedup_key`). */
export type Page = PageRequest;

export interface PageReceipt {
  dedupKey: string;
  status: string;
  message?: string;
}

/** Where the supervisor pages a person. */
export interface Pager {
  send(page: Page, signal?: AbortSignal): Promise<PageReceipt>;
}

/** PagerDuty's limits on an event (Events API v2). */
export const SUMMARY_MAX = 1024;
export const DEDUP_KEY_MAX = 255;

const Accepted = z.object({ status: z.string(), message: z.string().optional(), dedup_key: z.string() });

/**
 * PagerDuty Events API v2: `POST {url}` (https://events.pagerduty.com/v2/enqueue) with the
 * integration's routing key, `event_action: trigger`, the page's `dedup_key` and its summary,
 * source, severity and details. The supervisor sends it from an activity that Temporal retries;
 * the dedup key is what makes a retried send (a lost answer, a worker that died after sending)
 * one incident rather than two, so a trip pages exactly once. Errors follow the project's HTTP
 * rules: 429 retryable after Retry-After, other 4xx non-retryable, 5xx and timeouts retried.
 */
export function pagerDutyPager(opts: { url: string; routingKey: string; timeoutMs: number }): Pager {
  return {
    async send(page, signal) {
      const res = await http({
        method: 'POST',
        url: opts.url,
        timeoutMs: opts.timeoutMs,
        ...(signal ? { signal } : {}),
        body: {
          routing_key: opts.routingKey,
          event_action: 'trigger',
          dedup_key: page.dedupKey.slice(0, DEDUP_KEY_MAX),
          payload: {
            summary: page.summary.length > SUMMARY_MAX ? `${page.summary.slice(0, SUMMARY_MAX - 1)}…` : page.summary,
            source: page.source,
            severity: page.severity,
            timestamp: new Date().toISOString(),
            component: 'wakegate-supervisor',
            custom_details: page.details,
          },
        },
      });
      const body = Accepted.safeParse(res.json);
      if (!body.success) throw new Error(`pager: unexpected answer ${res.status}: ${JSON.stringify(res.json).slice(0, 200)}`);
      return { dedupKey: body.data.dedup_key, status: body.data.status, ...(body.data.message ? { message: body.data.message } : {}) };
    },
  };
}
