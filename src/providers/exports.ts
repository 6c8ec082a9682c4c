import { http } from './http';

/** A downstream export with no idempotency key, searchable by the reference the caller stored on it. */
export interface ExportAdapter {
  start(effectKey: string, campaign: string, signal?: AbortSignal): Promise<{ ref: string }>;
  /** Look the effect up by its key. Throws when the provider cannot answer: the caller cannot tell. */
  find(effectKey: string, signal?: AbortSignal): Promise<{ ref: string } | undefined>;
}

export function localExports(url: string, timeoutMs: number): ExportAdapter {
  return {
    async start(effectKey, campaign, signal) {
      const res = await http({ method: 'POST', url: `${url}/exports`, body: { campaign, reference: effectKey }, timeoutMs, signal });
      return { ref: String((res.json as { id?: string }).id) };
    },
    async find(effectKey, signal) {
      const res = await http({ method: 'GET', url: `${url}/exports?reference=${encodeURIComponent(effectKey)}`, timeoutMs, signal });
      if (!Array.isArray(res.json)) throw new Error(`export search answered ${JSON.stringify(res.json).slice(0, 100)}`);
      const hit = (res.json as { id: string }[])[0];
      return hit ? { ref: hit.id } : undefined;
    },
  };
}
