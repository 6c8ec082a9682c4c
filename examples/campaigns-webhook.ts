import { z } from 'zod';
import { defineWebhookSource } from 'wakegate';

/**
 * The body the campaign service posts on a config change (Standard Webhooks).
 * `version` is the campaign's config version, increasing with each change (out-of-order detection).
 */
export const CampaignChanged = z.object({
  type: z.string().min(1).max(100),
  campaignId: z.string().min(1).max(200),
  occurredAt: z.string().max(64),
  version: z.number().int().min(0),
  dashboards: z.array(z.string().min(1).max(64)).min(1).max(10),
});
export type CampaignChanged = z.infer<typeof CampaignChanged>;

/**
 * `POST /webhooks/campaigns`: signed with Standard Webhooks (`webhook-id`, `webhook-timestamp`,
 * `webhook-signature`), secret `WAKEGATE_WEBHOOK_SECRET_CAMPAIGNS`, feeding the `campaigns` trigger:
 * entity = campaignId, type = the body's type, occurredAt = the change's own time, version = the
 * config version, delivery id = `webhook-id` (the same across the sender's retries, tracing only).
 */
export const campaignsSource = defineWebhookSource({
  name: 'campaigns',
  trigger: 'campaigns',
  scheme: 'standard-webhooks',
  // base64 of "wakegate-dev-campaigns-secret" (Standard Webhooks secrets are base64 after `whsec_`).
  devSecret: 'whsec_d2FrZWdhdGUtZGV2LWNhbXBhaWducy1zZWNyZXQ=',
  body: CampaignChanged,
  map: (body, ctx) => ({
    kind: 'event',
    event: {
      source: 'campaigns',
      entity: body.campaignId,
      type: body.type,
      occurredAt: body.occurredAt,
      version: body.version,
      payload: { dashboards: body.dashboards },
      deliveryId: ctx.headers['webhook-id'],
    },
  }),
});
