import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { defineWebhookSource, refuseSignature, type CustomScheme, type Verifier } from 'wakegate';

/** The header the tracker signs with: `x-tracker-signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">`. */
export const SIGNATURE_HEADER = 'x-tracker-signature';

const hmac = (secret: string, t: string, rawBody: Buffer | string) => createHmac('sha256', secret).update(`${t}.`).update(rawBody).digest();

/** Sign a delivery the way the tracker does (for senders and tests): the header's value. */
export function signTrackerDelivery(secret: string, rawBody: Buffer | string, nowS = Math.floor(Date.now() / 1000)): string {
  return `t=${nowS},v1=${hmac(secret, String(nowS), rawBody).toString('hex')}`;
}

/**
 * The tracker's own signature scheme (not Standard Webhooks, not GitHub's): an HMAC-SHA256 over
 * `<t>.<raw body>` with a signed Unix timestamp `t`, compared in constant time. More than one `v1=`
 * is accepted (a secret being rotated). A timestamp more than `replayWindowS` old or ahead is refused.
 */
export const trackerSignature: CustomScheme = {
  name: 'tracker-hmac-sha256',
  create(secret: string, replayWindowS: number): Verifier {
    if (secret.length < 16) throw new Error('a tracker webhook secret has at least 16 characters');
    return {
      async verify(rawBody, headers, nowMs = Date.now()) {
        const header = headers[SIGNATURE_HEADER];
        if (!header) return refuseSignature('missing_signature', `${SIGNATURE_HEADER} header is required`);
        const parts = header.split(',').map((p) => p.trim().split('=') as [string, string | undefined]);
        const t = parts.find(([k]) => k === 't')?.[1];
        const signatures = parts.filter(([k, v]) => k === 'v1' && v !== undefined).map(([, v]) => v!);
        if (!t || !/^\d{1,12}$/.test(t)) return refuseSignature('bad_timestamp', `${SIGNATURE_HEADER} must carry t=<Unix seconds>`);
        if (!signatures.length) return refuseSignature('missing_signature', `${SIGNATURE_HEADER} must carry v1=<hex HMAC-SHA256>`);
        const skewS = Math.floor(nowMs / 1000) - Number(t);
        if (skewS > replayWindowS)
          return refuseSignature('timestamp_expired', `the signed timestamp is ${skewS} s old; the replay window is ${replayWindowS} s`);
        if (-skewS > replayWindowS)
          return refuseSignature('timestamp_in_future', `the signed timestamp is ${-skewS} s ahead; the replay window is ${replayWindowS} s`);
        const expected = hmac(secret, t, rawBody);
        const match = signatures.some((s) => /^[0-9a-f]{64}$/.test(s) && timingSafeEqual(Buffer.from(s, 'hex'), expected));
        return match ? { ok: true } : refuseSignature('bad_signature', `no v1 signature in ${SIGNATURE_HEADER} matches the body`);
      },
    };
  },
};

/** The body the tracker posts when an alert fires. */
export const AlertFired = z.object({
  incidentId: z.string().min(1).max(200),
  service: z.string().min(1).max(100),
  alert: z.string().min(1).max(500),
  firedAt: z.string().max(64),
});
export type AlertFired = z.infer<typeof AlertFired>;

/**
 * `POST /webhooks/tracker`: signed with the tracker's own scheme (`x-tracker-signature`), secret
 * `WAKEGATE_WEBHOOK_SECRET_TRACKER`, feeding the `incidents` trigger: entity = the service,
 * type `alert.fired`, occurredAt = when the alert fired, delivery id = `x-tracker-delivery`.
 */
export const trackerSource = defineWebhookSource({
  name: 'tracker',
  trigger: 'incidents',
  scheme: trackerSignature,
  devSecret: 'wakegate-dev-tracker-secret',
  body: AlertFired,
  map: (body, ctx) => ({
    kind: 'event',
    event: {
      source: 'incidents',
      entity: body.service,
      type: 'alert.fired',
      occurredAt: body.firedAt,
      payload: { service: body.service, alert: body.alert, incidentId: body.incidentId },
      deliveryId: ctx.headers['x-tracker-delivery'],
    },
  }),
});
