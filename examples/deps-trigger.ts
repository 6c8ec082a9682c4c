import { z } from 'zod';
import { defineTrigger } from 'wakegate';

/**
 * A newer release of a dependency wakes the dependency-bump agent. Entity = `repo:package`, type
 * `release.published`; the day bucket collapses repeated release notifications.
 */
export const depsTrigger = defineTrigger({
  source: 'deps',
  description: 'Dependency releases: wakes the dependency-bump agent.',
  eventTypes: ['release.published', 'check.due'],
  bucket: '1d',
  keyRationale: 'One bump per (repo, package) per day of the release: redelivered release notices are one event; the PR itself is keyed by branch.',
  fingerprint: ['repo', 'package', 'from', 'to'],
  payload: z
    .object({
      repo: z.string().min(1).max(200),
      package: z.string().min(1).max(200),
      from: z.string().min(1).max(50),
      to: z.string().min(1).max(50),
    })
    .passthrough(),
});
