import type { OutsideConfig } from '../config/config';
import { http } from './http';

/** Where a summary is posted. `keyed` says whether the provider honours an idempotency key. */
export interface ChannelAdapter {
  readonly keyed: boolean;
  post(effectKey: string, text: string, signal?: AbortSignal): Promise<{ ref: string; replayed: boolean }>;
}

/** The local channel stand-in (and any API like it): POST /messages with `Idempotency-Key`. */
export function localChannel(url: string, timeoutMs: number): ChannelAdapter {
  return {
    keyed: true,
    async post(effectKey, text, signal) {
      const res = await http({
        method: 'POST',
        url: `${url}/messages`,
        headers: { 'idempotency-key': effectKey },
        body: { channel: 'campaigns', text },
        timeoutMs,
        signal,
      });
      return { ref: String((res.json as { id?: string }).id), replayed: res.headers.get('idempotent-replayed') === 'true' };
    },
  };
}

/**
 * Generic HTTP: POST `{ text, effectKey }` to a URL with the effect key as `Idempotency-Key`. Safe
 * only against an endpoint that honours the header, which is what `keyed: true` asserts.
 */
export function httpChannel(url: string, timeoutMs: number): ChannelAdapter {
  return {
    keyed: true,
    async post(effectKey, text, signal) {
      const res = await http({ method: 'POST', url, headers: { 'idempotency-key': effectKey }, body: { text, effectKey }, timeoutMs, signal });
      const j = (res.json ?? {}) as { id?: string };
      return { ref: j.id ?? `http:${res.status}`, replayed: res.status === 200 && res.headers.get('idempotent-replayed') === 'true' };
    },
  };
}

/**
 * A Slack incoming webhook: POST `{ text }`. Slack takes no idempotency key, so this adapter is
 * `keyed: false` and the worker refuses to run a `provider_key` effect on it (see checkEffects).
 */
export function slackChannel(webhookUrl: string, timeoutMs: number): ChannelAdapter {
  return {
    keyed: false,
    async post(_effectKey, text, signal) {
      await http({ method: 'POST', url: webhookUrl, body: { text }, timeoutMs, signal });
      return { ref: 'slack', replayed: false };
    },
  };
}

export function channelAdapter(o: OutsideConfig): ChannelAdapter {
  switch (o.channel.adapter) {
    case 'slack':
      return slackChannel(o.channel.url, o.httpTimeoutMs);
    case 'http':
      return httpChannel(o.channel.url, o.httpTimeoutMs);
    default:
      return localChannel(o.channel.url, o.httpTimeoutMs);
  }
}
