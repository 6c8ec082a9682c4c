import { z } from 'zod';
import { defineWebhookSource, type Mapped } from 'wakegate';

const Release = z.object({
  tag_name: z.string().min(1).max(100),
  published_at: z.string().max(64).nullable(),
});

/** The parts of GitHub's `release` (and `ping`) payloads this source reads; everything else is dropped. */
export const GithubDelivery = z.object({
  action: z.string().max(50).optional(),
  release: Release.optional(),
  repository: z.object({ full_name: z.string().min(1).max(200), name: z.string().min(1).max(100) }).optional(),
});
export type GithubDelivery = z.infer<typeof GithubDelivery>;

/**
 * Where a release goes: GitHub's payload names the upstream repository, not the repository that
 * depends on it, so the hook URL says which dependent to bump:
 * `/webhooks/github?repo=acme/web&from=19.0.0[&package=react]` (package defaults to the upstream
 * repository's name). These routing parameters are not covered by GitHub's signature (it signs the
 * body only); they choose which dependent repository's bump is proposed, never what runs.
 */
export const GithubRoute = z.object({
  repo: z
    .string()
    .regex(/^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/, 'repo is owner/name of the repository to bump')
    .max(200),
  from: z.string().min(1).max(50),
  package: z.string().min(1).max(200).optional(),
});

const reject = (status: 400 | 422, code: string, message: string, issues?: { path: string; message: string }[]): Mapped => ({
  kind: 'reject',
  status,
  code,
  message,
  ...(issues ? { issues } : {}),
});

/**
 * `POST /webhooks/github`: GitHub's scheme (`X-Hub-Signature-256` HMAC over the body,
 * `X-GitHub-Event`, `X-GitHub-Delivery`), secret `WAKEGATE_WEBHOOK_SECRET_GITHUB`, feeding the
 * `deps` trigger: a `release` with action `published` becomes `release.published` for entity
 * `<repo>:<package>` with `to` = the tag (without a leading `v`), occurredAt = the release's
 * `published_at`, delivery id = `X-GitHub-Delivery`. A `ping` (sent when the hook is created) is
 * answered 200 with nothing stored; other events and release actions are refused with 422.
 * GitHub signs no timestamp: a replayed delivery is caught by the gate's event key, not by a window.
 */
export const githubSource = defineWebhookSource({
  name: 'github',
  trigger: 'deps',
  scheme: 'github',
  devSecret: 'wakegate-dev-github-secret',
  body: GithubDelivery,
  map: (body, ctx): Mapped => {
    const event = ctx.headers['x-github-event'];
    if (event === 'ping') return { kind: 'ignore', reason: 'ping: the hook is reachable; nothing to store' };
    if (event !== 'release') return reject(422, 'not_a_trigger', `github source takes "release" events, not "${event ?? '(none)'}"`);
    if (body.action !== 'published') return reject(422, 'not_a_trigger', `github source takes release action "published", not "${body.action ?? '(none)'}"`);
    if (!body.release || !body.repository || !body.release.published_at) {
      return reject(400, 'invalid_event', 'a published release needs release.tag_name, release.published_at and repository', [
        { path: 'body.release', message: 'required with published_at' },
      ]);
    }
    const route = GithubRoute.safeParse(ctx.query);
    if (!route.success) {
      const issues = route.error.issues.map((i) => ({ path: ['query', ...i.path].join('.'), message: i.message }));
      return reject(400, 'invalid_event', `the hook URL must say which repository to bump: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`, issues);
    }
    const pkg = route.data.package ?? body.repository.name;
    return {
      kind: 'event',
      event: {
        source: 'deps',
        entity: `${route.data.repo}:${pkg}`,
        type: 'release.published',
        occurredAt: body.release.published_at,
        payload: { repo: route.data.repo, package: pkg, from: route.data.from, to: body.release.tag_name.replace(/^v(?=\d)/, '') },
        deliveryId: ctx.headers['x-github-delivery'],
      },
    };
  },
});
