import type * as OctokitMethods from '@octokit/webhooks-methods';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import type { SignatureFailure, SignatureScheme, Verdict, Verifier } from './source';

export type { SignatureFailure, Verdict, Verifier };

// @octokit/webhooks-methods is ESM only (no `require` export): load it once, on first use.
let octokit: Promise<typeof OctokitMethods> | undefined;
/** Whether `signature` is GitHub's HMAC over `payload` (`sha256=<hex>`), through @octokit/webhooks-methods. */
async function githubVerify(secret: string, payload: string, signature: string): Promise<boolean> {
  octokit ??= import('@octokit/webhooks-methods');
  return (await octokit).verify(secret, payload, signature);
}

/** A refusal with its stable code (401 to the sender). */
export const refuseSignature = (code: SignatureFailure, message: string): Verdict => ({ ok: false, code, message });

/**
 * A verifier for one source. Both schemes verify the HMAC over the raw body bytes with a
 * constant-time comparison inside the library made for them: `standardwebhooks` (HMAC-SHA256 over
 * `id.timestamp.body`) and `@octokit/webhooks-methods` (`X-Hub-Signature-256`).
 * Standard Webhooks signs a timestamp: one more than `replayWindowS` seconds old or ahead of this
 * clock is refused, so a captured delivery cannot be replayed later. GitHub signs no timestamp.
 * Throws at construction for a secret the scheme cannot use (the message never contains it).
 */
export function createVerifier(scheme: SignatureScheme, secret: string, replayWindowS: number): Verifier {
  if (typeof scheme === 'object') return scheme.create(secret, replayWindowS);
  if (scheme === 'standard-webhooks') {
    let webhook: Webhook;
    try {
      webhook = new Webhook(secret);
    } catch {
      throw new Error('a Standard Webhooks secret is "whsec_" followed by base64 (at least 1 byte)');
    }
    return {
      async verify(rawBody, headers, nowMs = Date.now()) {
        const id = headers['webhook-id'];
        const timestamp = headers['webhook-timestamp'];
        const signature = headers['webhook-signature'];
        if (!id || !timestamp || !signature)
          return refuseSignature('missing_signature', 'webhook-id, webhook-timestamp and webhook-signature headers are required');
        if (!/^\d{1,12}$/.test(timestamp)) return refuseSignature('bad_timestamp', 'webhook-timestamp must be Unix seconds');
        const skewS = Math.floor(nowMs / 1000) - Number(timestamp);
        if (skewS > replayWindowS) return refuseSignature('timestamp_expired', `webhook-timestamp is ${skewS} s old; the replay window is ${replayWindowS} s`);
        if (-skewS > replayWindowS)
          return refuseSignature('timestamp_in_future', `webhook-timestamp is ${-skewS} s ahead; the replay window is ${replayWindowS} s`);
        try {
          webhook.verify(rawBody, { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': signature }, { jsonParse: false });
          return { ok: true };
        } catch (err) {
          if (err instanceof WebhookVerificationError) return refuseSignature('bad_signature', 'no webhook-signature matches the body');
          throw err;
        }
      },
    };
  }
  return {
    async verify(rawBody, headers) {
      const signature = headers['x-hub-signature-256'];
      if (!signature) return refuseSignature('missing_signature', 'X-Hub-Signature-256 header is required');
      if (!/^sha256=[0-9a-f]{64}$/.test(signature)) return refuseSignature('bad_signature', 'X-Hub-Signature-256 must be sha256=<64 hex digits>');
      if (rawBody.length === 0) return refuseSignature('bad_signature', 'an empty body carries no signed event');
      return (await githubVerify(secret, rawBody.toString('utf8'), signature))
        ? { ok: true }
        : refuseSignature('bad_signature', 'X-Hub-Signature-256 does not match the body');
    },
  };
}
