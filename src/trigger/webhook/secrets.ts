import { secretVariable, type WebhookSource } from './source';

/** Each source's secret by source name, and which sources fell back to their documented dev secret. */
export interface ResolvedSecrets {
  secrets: Record<string, string>;
  fromDev: string[];
}

/**
 * Pick each source's secret from the configured `WAKEGATE_WEBHOOK_SECRET_<SOURCE>` values. With
 * `allowDev` (`npm start`), an unset one falls back to the source's documented dev secret and is
 * listed in `fromDev` so the caller says so; without it, an unset secret is an error naming the variable
 * (and `devRefused`, why the dev secret was not allowed, when the caller asked for it and was refused).
 */
export function resolveSecrets(
  sources: readonly WebhookSource<unknown>[],
  configured: Record<string, string>,
  allowDev: boolean,
  devRefused?: string,
): ResolvedSecrets {
  const secrets: Record<string, string> = {};
  const fromDev: string[] = [];
  for (const source of sources) {
    const value = configured[secretVariable(source.name)];
    if (value) secrets[source.name] = value;
    else if (allowDev) {
      secrets[source.name] = source.devSecret;
      fromDev.push(source.name);
    } else throw new Error(`webhook source "${source.name}" needs its secret in ${secretVariable(source.name)}${devRefused ? ` (${devRefused})` : ''}`);
  }
  return { secrets, fromDev };
}
