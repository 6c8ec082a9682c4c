import type { LanguageModelV3 } from '@ai-sdk/provider';
import type * as AnthropicSdk from '@ai-sdk/anthropic';
import type * as GoogleSdk from '@ai-sdk/google';
import type * as OpenAISdk from '@ai-sdk/openai';

// Each provider package is loaded when a model of it is made, not by every process that imports wakegate.
/* eslint-disable @typescript-eslint/no-require-imports */
const createOpenAI: typeof OpenAISdk.createOpenAI = (o) => (require('@ai-sdk/openai') as typeof OpenAISdk).createOpenAI(o);
const createAnthropic: typeof AnthropicSdk.createAnthropic = (o) => (require('@ai-sdk/anthropic') as typeof AnthropicSdk).createAnthropic(o);
const createGoogleGenerativeAI: typeof GoogleSdk.createGoogleGenerativeAI = (o) => (require('@ai-sdk/google') as typeof GoogleSdk).createGoogleGenerativeAI(o);
/* eslint-enable @typescript-eslint/no-require-imports */

/*
 * Language models for aiSdkModel. Base URLs and keys are always passed explicitly: left out, the SDK
 * would read OPENAI_BASE_URL, ANTHROPIC_BASE_URL, *_API_KEY and the like from the environment, and
 * settings are read in one place only (src/config/). Creating a model makes no request and cannot fail;
 * a bad key or URL fails on the first turn (ProviderRejected for a 401/403/404).
 */

/** Where a provider is and who calls it. */
export interface ProviderSettings {
  /** The API's base URL, up to and including its version segment (e.g. `https://api.openai.com/v1`). */
  baseURL: string;
  /** The API key (sent as the provider's auth header; an empty key is sent as is, never looked up). */
  apiKey: string;
  /** The provider's model id. */
  model: string;
  /** Give up on one request after this long, ms (a retryable timeout; the run's retry and budget apply). @default no limit of its own (the activity's timeouts) */
  timeoutMs?: number;
}

/** `fetch` with a per-request time limit on top of the caller's abort signal. */
function fetchWithin(timeoutMs: number | undefined): typeof fetch | undefined {
  if (!timeoutMs) return undefined;
  return (input, init) => {
    const limit = AbortSignal.timeout(timeoutMs);
    return fetch(input, { ...init, signal: init?.signal ? AbortSignal.any([init.signal, limit]) : limit });
  };
}

/** Any OpenAI-compatible endpoint through the Chat Completions API (`POST {baseURL}/chat/completions`), not the Responses API. */
export function openaiCompatible(s: ProviderSettings): LanguageModelV3 {
  return createOpenAI({ baseURL: s.baseURL, apiKey: s.apiKey, fetch: fetchWithin(s.timeoutMs) }).chat(s.model);
}

/** Anthropic's Messages API (`POST {baseURL}/messages`). @default baseURL `https://api.anthropic.com/v1` */
export function anthropic(s: Omit<ProviderSettings, 'baseURL'> & { baseURL?: string }): LanguageModelV3 {
  return createAnthropic({ baseURL: s.baseURL ?? 'https://api.anthropic.com/v1', apiKey: s.apiKey, fetch: fetchWithin(s.timeoutMs) }).messages(s.model);
}

/** Google's Gemini API (generateContent). @default baseURL `https://generativelanguage.googleapis.com/v1beta` */
export function google(s: Omit<ProviderSettings, 'baseURL'> & { baseURL?: string }): LanguageModelV3 {
  return createGoogleGenerativeAI({
    baseURL: s.baseURL ?? 'https://generativelanguage.googleapis.com/v1beta',
    apiKey: s.apiKey,
    fetch: fetchWithin(s.timeoutMs),
  }).chat(s.model);
}
