import type { z } from 'zod';
import type { WakeEventInput } from '../../core/event';

/** Why a delivery's signature was refused (401); stable codes for senders and metrics. */
export type SignatureFailure = 'missing_signature' | 'bad_signature' | 'bad_timestamp' | 'timestamp_expired' | 'timestamp_in_future';

export type Verdict = { ok: true } | { ok: false; code: SignatureFailure; message: string };

/** A source's secret, checked once at start-up so a malformed one fails then, not per request. */
export interface Verifier {
  verify(rawBody: Buffer, headers: Record<string, string | undefined>, nowMs?: number): Promise<Verdict>;
}

/**
 * How a webhook source signs its deliveries: one of the built-in schemes, or your own verifier
 * (a sender with its own signing: `{ name, create(secret, replayWindowS) }`, `create` returning a
 * `Verifier` that checks the raw body and headers; throw from `create` for a secret it cannot use).
 */
export type SignatureScheme = 'standard-webhooks' | 'github' | CustomScheme;

/** A signature scheme of your own. */
export interface CustomScheme {
  /** Shown on `/status` and in errors. @example 'hmac-sha256-hex' */
  name: string;
  create(secret: string, replayWindowS: number): Verifier;
}

/** What the verified request carries besides its body: header values (lower-case names) and the URL's query. */
export interface DeliveryContext {
  headers: Record<string, string | undefined>;
  query: Record<string, string | undefined>;
}

/**
 * What a source's mapping makes of one verified delivery:
 * - `event`: one event for the gate (its `source` is the trigger the webhook source feeds);
 * - `ignore`: a delivery that carries no event for this source (a GitHub `ping`), answered 200 with
 *   the reason and nothing stored, because there is nothing to store;
 * - `reject`: a delivery this source cannot take: 400 (`status`) when something is missing, 422 for
 *   a well-formed delivery of something it does not take; `issues` name the fields.
 */
export type Mapped =
  | { kind: 'event'; event: WakeEventInput }
  | { kind: 'ignore'; reason: string }
  | { kind: 'reject'; status: 400 | 422; code: string; message: string; issues?: { path: string; message: string }[] };

/**
 * A webhook source: `POST /webhooks/<name>`. It names its signature scheme, the variable that holds
 * its secret (`WAKEGATE_WEBHOOK_SECRET_<NAME>`), the trigger source it feeds, the zod schema of its
 * body, and how a parsed body maps to an event (entity, type, occurredAt, version, delivery id).
 * Bodies are parsed only after the signature over the raw bytes checked out.
 */
export interface WebhookSource<Body = unknown> {
  /** URL segment and metric label: lower-case letters, digits, `-`, `.`. */
  name: string;
  /** The trigger definition (src/trigger/) whose gate this source enters. */
  trigger: string;
  scheme: SignatureScheme;
  /** Secret used by `npm start` when the variable is unset; documented, never for production. */
  devSecret: string;
  /** The body, validated at the edge. Unknown fields are dropped: only what the mapping names reaches Temporal. */
  body: z.ZodType<Body>;
  /** Map a verified, parsed body to what the gate takes. */
  map(body: Body, ctx: DeliveryContext): Mapped;
}

/** The variable that holds a source's secret: upper case, `-` and `.` as `_`. */
export function secretVariable(source: string): string {
  return `WAKEGATE_WEBHOOK_SECRET_${source.toUpperCase().replace(/[-.]/g, '_')}`;
}

/**
 * Declare a source, its body type inferred from the schema. The result takes any body: the ingress
 * only hands `map` what `body` parsed, so the mapping sees its own type.
 */
export function defineWebhookSource<Body>(source: WebhookSource<Body>): WebhookSource<unknown> {
  if (!/^[a-z][a-z0-9.-]*$/.test(source.name)) throw new Error(`webhook source name "${source.name}": use lower-case letters, digits, "." or "-"`);
  return { ...source, map: (body, ctx) => source.map(body as Body, ctx) };
}
