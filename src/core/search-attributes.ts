import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/**
 * Search attributes every wake run carries, filterable in the Web UI (e.g. `WakeTerminalReason = "no_op"`).
 * temporal-dev.sh registers the same list; test/dev-server/temporal-dev.test.ts keeps the two in step.
 * SQLite (the dev server) allows 10 Keyword and 3 of each other type per namespace.
 */
export const WakeEventKey = defineSearchAttributeKey('WakeEventKey', SearchAttributeType.KEYWORD);
export const WakeSource = defineSearchAttributeKey('WakeSource', SearchAttributeType.KEYWORD);
export const WakeEntity = defineSearchAttributeKey('WakeEntity', SearchAttributeType.KEYWORD);
export const WakeEventType = defineSearchAttributeKey('WakeEventType', SearchAttributeType.KEYWORD);
export const WakeAgent = defineSearchAttributeKey('WakeAgent', SearchAttributeType.KEYWORD);
export const WakeTerminalReason = defineSearchAttributeKey('WakeTerminalReason', SearchAttributeType.KEYWORD);
/** What the run is about: the agent's wake key (a campaign, `repo:package`). */
export const WakeKey = defineSearchAttributeKey('WakeKey', SearchAttributeType.KEYWORD);
/** A coalesced run: the event keys it absorbed (the first {@link MAX_DELIVERY_IDS_INDEXED}; all of them in its result). */
export const WakeAbsorbedEventKeys = defineSearchAttributeKey('WakeAbsorbedEventKeys', SearchAttributeType.KEYWORD_LIST);
/** The delivery ids the run keeps (at most {@link MAX_DELIVERY_IDS_INDEXED}: the first ones and the newest, as its result lists them); `WakeDeliveryCount` counts them all. */
export const WakeDeliveryIds = defineSearchAttributeKey('WakeDeliveryIds', SearchAttributeType.KEYWORD_LIST);
export const WakeDeliveryCount = defineSearchAttributeKey('WakeDeliveryCount', SearchAttributeType.INT);
export const WakeAttempts = defineSearchAttributeKey('WakeAttempts', SearchAttributeType.INT);
export const WakeTokens = defineSearchAttributeKey('WakeTokens', SearchAttributeType.INT);
export const WakeCostUsd = defineSearchAttributeKey('WakeCostUsd', SearchAttributeType.DOUBLE);
export const WakeOccurredAt = defineSearchAttributeKey('WakeOccurredAt', SearchAttributeType.DATETIME);
/** Held by the supervisor: `halted` (a person releases it) or `cap` (runs when the window slides); `released` or `discarded` after. */
export const WakeHeld = defineSearchAttributeKey('WakeHeld', SearchAttributeType.KEYWORD);
/** The agent's version the run was pinned to (`defineAgent`'s `version`; its rollout chose it). */
export const WakeVersion = defineSearchAttributeKey('WakeVersion', SearchAttributeType.KEYWORD);
/** Effects the run carried out. A Double only because SQLite (the dev server) allows 3 Ints per namespace, and they are taken. */
export const WakeEffects = defineSearchAttributeKey('WakeEffects', SearchAttributeType.DOUBLE);

export const ALL_SEARCH_ATTRIBUTES = [
  WakeEventKey,
  WakeSource,
  WakeEntity,
  WakeEventType,
  WakeAgent,
  WakeTerminalReason,
  WakeKey,
  WakeAbsorbedEventKeys,
  WakeDeliveryIds,
  WakeDeliveryCount,
  WakeAttempts,
  WakeTokens,
  WakeCostUsd,
  WakeOccurredAt,
  WakeHeld,
  WakeVersion,
  WakeEffects,
] as const;

/** Search attribute values are size-limited; delivery ids past this count are kept in the run's state only. */
export const MAX_DELIVERY_IDS_INDEXED = 20;
