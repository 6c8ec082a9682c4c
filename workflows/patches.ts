import { deprecatePatch, patched } from '@temporalio/workflow';

/**
 * Every workflow patch ID, with the release it arrived in. Workflow code changes that would make an
 * open run's history replay differently go behind `isPatched(id)`; the ID is added here first.
 *
 * A patch lives through three releases: `isPatched` (old and new runs both replay), then
 * `deprecated(id)` once no run older than the patch is open, then deleted with its entry.
 * Before 1.0 no deployment holds open runs, so pre-release patches were deleted and the replay
 * histories in test/replay/histories re-recorded instead; this registry starts empty with 1.0.
 *
 * Lint refuses `patched` and `deprecatePatch` imported anywhere else in workflows/.
 */
export const PATCHES = {} as const satisfies Record<string, { since: string }>;

export type PatchId = keyof typeof PATCHES;

/** True in runs that reached this code after the patch arrived, and on their replays. */
export function isPatched(id: PatchId): boolean {
  return patched(id);
}

/** Marks a patch whose older runs have all closed; the next release deletes it. */
export function deprecated(id: PatchId): void {
  deprecatePatch(id);
}
