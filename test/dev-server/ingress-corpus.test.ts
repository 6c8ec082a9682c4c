import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Webhook } from 'standardwebhooks';
import type { RunningIngress } from '../../src/processes/ingress-listeners';
import { useDevEnv, unique } from '../helpers/env';
import { CAMPAIGNS_SECRET, campaignBody, githubHeaders, post, releaseBody, standardHeaders, startTestIngress } from '../helpers/ingress';

/**
 * A generated corpus of invalid deliveries (no case is valid): each must be answered with its
 * documented status and a JSON error naming the reason, never 2xx, never a crash (the ingress still
 * answers afterwards, no 5xx at all).
 */
interface Case {
  name: string;
  path: string;
  body: string | Buffer;
  headers: Record<string, string>;
  status: number;
  code: string;
}

let seed = 42;
const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
const randomText = (n: number) => Array.from({ length: n }, () => String.fromCharCode(33 + Math.floor(rand() * 90))).join('');
const OTHER_SECRET = 'whsec_' + Buffer.from('somebody-else-entirely').toString('base64');

async function corpus(): Promise<Case[]> {
  const cases: Case[] = [];
  const C = '/webhooks/campaigns';
  const good = (id: string) => campaignBody(`corpus-${id}`);
  const signed = (body: string | Buffer, id: string, at?: Date) => standardHeaders(body.toString(), id, at);
  const add = (c: Case) => cases.push(c);

  // Missing signature headers: every non-empty subset removed.
  const drops = [
    ['webhook-id'],
    ['webhook-timestamp'],
    ['webhook-signature'],
    ['webhook-id', 'webhook-timestamp'],
    ['webhook-id', 'webhook-signature'],
    ['webhook-timestamp', 'webhook-signature'],
    ['webhook-id', 'webhook-timestamp', 'webhook-signature'],
  ];
  for (let i = 0; i < 35; i++) {
    const body = good(`miss-${i}`);
    const h = signed(body, `miss-${i}`);
    for (const d of drops[i % drops.length]!) delete h[d];
    add({ name: `missing ${drops[i % drops.length]!.join('+')} #${i}`, path: C, body, headers: h, status: 401, code: 'missing_signature' });
  }
  // Bad signatures: garbage, other secret, other body, other id, wrong version tag, truncated.
  for (let i = 0; i < 60; i++) {
    const body = good(`sig-${i}`);
    const h = signed(body, `sig-${i}`);
    const at = new Date();
    const variants = [
      () => ({ ...h, 'webhook-signature': `v1,${Buffer.from(randomText(32)).toString('base64')}` }),
      () => ({ ...h, 'webhook-signature': new Webhook(OTHER_SECRET).sign(`sig-${i}`, at, body) }),
      () => ({ ...h, 'webhook-signature': new Webhook(CAMPAIGNS_SECRET).sign(`sig-${i}`, at, body + ' ') }),
      () => ({ ...h, 'webhook-signature': new Webhook(CAMPAIGNS_SECRET).sign(`other-${i}`, at, body) }),
      () => ({ ...h, 'webhook-signature': h['webhook-signature']!.replace(/^v1,/, 'v2,') }),
      () => ({ ...h, 'webhook-signature': h['webhook-signature']!.slice(0, 20) }),
      () => ({ ...h, 'webhook-signature': randomText(10 + (i % 30)) }),
      () => ({ ...h, 'webhook-signature': `v1a,${h['webhook-signature']!.slice(3)}` }),
    ];
    add({
      name: `bad signature variant ${i % variants.length} #${i}`,
      path: C,
      body,
      headers: variants[i % variants.length]!(),
      status: 401,
      code: 'bad_signature',
    });
  }
  // Timestamps: not a number; expired (replays outside the window); in the future. Signed correctly for that time.
  for (let i = 0; i < 20; i++) {
    const body = good(`ts-${i}`);
    const h = signed(body, `ts-${i}`);
    add({
      name: `timestamp not seconds #${i}`,
      path: C,
      body,
      headers: { ...h, 'webhook-timestamp': pick(['yesterday', '-5', '1.5e9', 'x', '1 2', '0x10', '99999999999999', '12:00']) },
      status: 401,
      code: 'bad_timestamp',
    });
  }
  for (let i = 0; i < 40; i++) {
    const body = good(`old-${i}`);
    const ageS = 301 + Math.floor(rand() * 30 * 86400);
    add({
      name: `replayed ${ageS} s late #${i}`,
      path: C,
      body,
      headers: signed(body, `old-${i}`, new Date(Date.now() - ageS * 1000)),
      status: 401,
      code: 'timestamp_expired',
    });
  }
  for (let i = 0; i < 30; i++) {
    const body = good(`fut-${i}`);
    const aheadS = 301 + Math.floor(rand() * 86400);
    add({
      name: `timestamp ${aheadS} s ahead #${i}`,
      path: C,
      body,
      headers: signed(body, `fut-${i}`, new Date(Date.now() + aheadS * 1000)),
      status: 401,
      code: 'timestamp_in_future',
    });
  }
  // Malformed JSON, correctly signed.
  const malformed = [
    '',
    '{',
    '{"campaignId":',
    '{"a":1,}',
    "{'a':1}",
    'NaN',
    '{"a":NaN}',
    'undefined',
    '{"a":1}}',
    '[1,2',
    '\ufeff{"a":1}',
    '{"a":"\u0001"}',
    'nul',
    'tru',
    '{"a" 1}',
    '{a:1}',
    '01',
    '"\\x41"',
  ];
  for (let i = 0; i < 54; i++) {
    const body = malformed[i % malformed.length]! + (i >= malformed.length ? ' '.repeat(i % 3) : '');
    add({
      name: `malformed JSON ${JSON.stringify(body).slice(0, 30)} #${i}`,
      path: C,
      body,
      headers: signed(body, `mal-${i}`),
      status: body.trim() === '' ? 400 : 400,
      code: 'invalid_json',
    });
  }
  // Valid JSON that is not an object.
  for (const [i, body] of ['[]', '[{"campaignId":"x"}]', '1', '"text"', 'null', 'true', '3.14', '[[[]]]'].entries()) {
    add({ name: `non-object JSON ${body} #${i}`, path: C, body, headers: signed(body, `nonobj-${i}`), status: 400, code: 'invalid_json' });
  }
  // Invalid UTF-8 bytes outside any string: not JSON.
  for (let i = 0; i < 10; i++) {
    const body = Buffer.concat([Buffer.from('{"campaignId":"x",'), Buffer.from([0xc3 + (i % 3), 0x28, 0xff - i]), Buffer.from(':1}')]);
    add({ name: `invalid UTF-8 #${i}`, path: C, body, headers: signed(body, `utf-${i}`), status: 400, code: 'invalid_json' });
  }
  // Wrong types and missing fields (body schema): 400 invalid_event naming the field.
  const wrong: Record<string, unknown>[] = [
    { campaignId: 42 },
    { campaignId: null },
    { campaignId: '' },
    { campaignId: ['a'] },
    { campaignId: 'x'.repeat(201) },
    { version: -1 },
    { version: 1.5 },
    { version: '7' },
    { version: null },
    { version: Number.MAX_SAFE_INTEGER + 2 },
    { dashboards: [] },
    { dashboards: 'reach' },
    { dashboards: [1, 2] },
    { dashboards: [''] },
    { dashboards: Array.from({ length: 11 }, (_, k) => `d${k}`) },
    { dashboards: ['x'.repeat(65)] },
    { dashboards: ['😀'.repeat(65)] },
    { type: 5 },
    { type: '' },
    { occurredAt: 12345 },
    { type: 'x'.repeat(101) },
    { occurredAt: 'x'.repeat(65) },
    { dashboards: null },
    { dashboards: {} },
  ];
  for (let i = 0; i < 72; i++) {
    const over = wrong[i % wrong.length]!;
    const body = campaignBody(`types-${i}`, over);
    add({
      name: `wrong type ${JSON.stringify(over).slice(0, 40)} #${i}`,
      path: C,
      body,
      headers: signed(body, `type-${i}`),
      status: 400,
      code: 'invalid_event',
    });
  }
  for (const [i, field] of ['type', 'campaignId', 'occurredAt', 'version', 'dashboards'].entries()) {
    const obj = JSON.parse(campaignBody(`missing-${i}`));
    delete obj[field];
    const body = JSON.stringify(obj);
    add({ name: `missing ${field}`, path: C, body, headers: signed(body, `missing-${i}`), status: 400, code: 'invalid_event' });
  }
  // Fields valid for the body schema that the gate refuses: event type, time, control characters, whitespace.
  const gateRefusals: [Record<string, unknown>, string][] = [
    [{ type: 'config.deleted' }, 'unknown_event_type'],
    [{ type: 'report.sent' }, 'unknown_event_type'],
    [{ occurredAt: 'yesterday' }, 'invalid_event'],
    [{ occurredAt: '2026-12-02' }, 'invalid_event'],
    [{ occurredAt: '2026-12-02T14:05:00' }, 'invalid_event'],
    [{ occurredAt: '2026-13-45T99:00:00Z' }, 'invalid_event'],
    [{ campaignId: 'bad\u0000id' }, 'invalid_event'],
    [{ campaignId: 'line\nbreak' }, 'invalid_event'],
    [{ campaignId: 'del\u007f' }, 'invalid_event'],
    [{ campaignId: '\tlead' }, 'invalid_event'],
    [{ campaignId: ' padded ' }, 'invalid_event'],
    [{ campaignId: 'esc\u001b[31m' }, 'invalid_event'],
    [{ type: 'config.changed\r\n' }, 'invalid_event'],
    [{ campaignId: 'bell\u0007' }, 'invalid_event'],
  ];
  for (let i = 0; i < 56; i++) {
    const [over, code] = gateRefusals[i % gateRefusals.length]!;
    const body = campaignBody(`gate-${i}`, over);
    add({ name: `gate refuses ${JSON.stringify(over)} #${i}`, path: C, body, headers: signed(body, `gate-${i}`), status: 400, code });
  }
  // Control characters in the signature headers themselves: refused, never crash.
  for (let i = 0; i < 10; i++) {
    const body = good(`hdr-${i}`);
    const h = signed(body, `hdr-${i}`);
    add({
      name: `header junk #${i}`,
      path: C,
      body,
      headers: { ...h, 'webhook-signature': `v1,${'\u00e9'.repeat(i + 1)}` },
      status: 401,
      code: 'bad_signature',
    });
  }
  // Deep nesting (signed): too deep for the ingress, or for the JSON parser itself.
  for (let i = 0; i < 30; i++) {
    const depth = 33 + Math.floor(rand() * 20_000);
    const body = campaignBody(`deep-${i}`).replace(/}$/, `,"extra":${'['.repeat(depth)}${']'.repeat(depth)}}`);
    add({
      name: `nested ${depth} deep #${i}`,
      path: C,
      body,
      headers: signed(body, `deep-${i}`),
      status: 400,
      code: body.length > 256 * 1024 ? 'too_large' : 'too_deep',
    });
  }
  // Oversize: over the 256 KiB limit, signed or not.
  for (let i = 0; i < 20; i++) {
    const body = campaignBody(`big-${i}`, { padding: 'x'.repeat(256 * 1024 + 1 + i * 5000) });
    add({
      name: `oversize ${body.length} #${i}`,
      path: C,
      body,
      headers: i % 2 ? signed(body, `big-${i}`) : { 'content-type': 'application/json' },
      status: 413,
      code: 'too_large',
    });
  }
  // Unknown sources.
  for (let i = 0; i < 30; i++) {
    const name =
      pick(['nope', 'Campaigns', 'campaigns2', 'github-app', 'stripe', '..%2f', 'a'.repeat(200), 'camp%00aigns', 'ping', 'deps']) + (i >= 10 ? `-${i}` : '');
    const body = good(`unknown-${i}`);
    add({
      name: `unknown source ${name.slice(0, 20)} #${i}`,
      path: `/webhooks/${name}`,
      body,
      headers: signed(body, `unknown-${i}`),
      status: 404,
      code: 'unknown_source',
    });
  }
  for (const [i, path] of ['/webhooks', '/webhooks/', '/webhook/campaigns', '/campaigns', '/webhooks/campaigns/extra'].entries()) {
    const body = good(`route-${i}`);
    add({
      name: `no route ${path}`,
      path,
      body,
      headers: signed(body, `route-${i}`),
      status: 404,
      code: path === '/webhooks/' ? 'unknown_source' : 'not_found',
    });
  }
  // Wrong content types (correctly signed otherwise).
  const types = [
    'text/plain',
    'application/x-www-form-urlencoded',
    'application/xml',
    'multipart/form-data; boundary=x',
    'application/octet-stream',
    'text/json',
    'application/jsonp',
    'application/json-patch+json',
    'image/png',
    'application/vnd.api+json',
  ];
  for (let i = 0; i < 30; i++) {
    const body = good(`ct-${i}`);
    add({
      name: `content type ${types[i % types.length]} #${i}`,
      path: C,
      body,
      headers: { ...signed(body, `ct-${i}`), 'content-type': types[i % types.length]! },
      status: 415,
      code: 'unsupported_media_type',
    });
  }
  for (let i = 0; i < 5; i++) {
    const body = good(`noct-${i}`);
    const h = signed(body, `noct-${i}`);
    delete h['content-type'];
    add({ name: `no content type #${i}`, path: C, body, headers: h, status: 415, code: 'unsupported_media_type' });
  }
  // GitHub: missing or bad signatures, not a release, no route to a dependent.
  for (let i = 0; i < 30; i++) {
    const body = releaseBody(`up/pkg-${i}`, 'v1.0.0');
    const h = await githubHeaders(body, 'release', `gh-${i}`);
    const url = `/webhooks/github?repo=acme/web&from=0.9.0`;
    const variants: [Record<string, string>, number, string][] = [
      [{ ...h, 'x-hub-signature-256': '' }, 401, 'missing_signature'],
      [{ ...h, 'x-hub-signature-256': `sha256=${'0'.repeat(64)}` }, 401, 'bad_signature'],
      [{ ...h, 'x-hub-signature-256': `sha1=${'a'.repeat(40)}` }, 401, 'bad_signature'],
      [{ ...(await githubHeaders(body, 'release', `gh-${i}`, 'not-the-secret')) }, 401, 'bad_signature'],
      [{ ...(await githubHeaders(body + '\n', 'release', `gh-${i}`)) }, 401, 'bad_signature'],
      [{ ...h, 'x-github-event': 'push' }, 422, 'not_a_trigger'],
    ];
    const [headers, status, code] = variants[i % variants.length]!;
    if (!headers['x-hub-signature-256']) delete headers['x-hub-signature-256'];
    add({ name: `github ${code} #${i}`, path: url, body: code === 'bad_signature' && i % 6 === 4 ? body : body, headers, status, code });
  }
  for (let i = 0; i < 12; i++) {
    const body = i % 3 === 0 ? releaseBody(`up/q-${i}`, 'v1.0.0', { action: 'created' }) : releaseBody(`up/q-${i}`, 'v1.0.0');
    const path = i % 3 === 0 ? '/webhooks/github?repo=acme/web&from=1' : i % 3 === 1 ? '/webhooks/github?from=1' : '/webhooks/github?repo=not-a-repo&from=1';
    add({
      name: `github route #${i}`,
      path,
      body,
      headers: await githubHeaders(body, 'release', `ghq-${i}`),
      status: i % 3 === 0 ? 422 : 400,
      code: i % 3 === 0 ? 'not_a_trigger' : 'invalid_event',
    });
  }
  return cases;
}

const env = useDevEnv();
let ingress: RunningIngress;
before(async () => {
  await env.ready();
  // A limit no corpus run reaches: every case gets its own status, not a 429.
  ingress = await startTestIngress(env, unique('corpus'), { ratePerSecond: 1e6, burst: 1e6 });
});
after(async () => {
  await ingress?.close();
});

test('a generated corpus of 500+ invalid deliveries: each its documented status and error code, no 2xx, no crash', async () => {
  const cases = await corpus();
  assert.ok(cases.length >= 500, `only ${cases.length} cases`);
  const wrong: string[] = [];
  const statuses: Record<number, number> = {};
  for (let i = 0; i < cases.length; i += 16) {
    await Promise.all(
      cases.slice(i, i + 16).map(async (c) => {
        const a = await post(`${ingress.url}${c.path}`, c.body, c.headers);
        statuses[a.status] = (statuses[a.status] ?? 0) + 1;
        if (a.status !== c.status || a.json.error?.code !== c.code || !a.json.error?.message) {
          wrong.push(`${c.name}: expected ${c.status} ${c.code}, got ${a.status} ${JSON.stringify(a.json).slice(0, 200)}`);
        }
        if (a.status === 429 || a.status === 503) assert.ok(a.retryAfter);
      }),
    );
  }
  assert.deepEqual(wrong, [], `${wrong.length} of ${cases.length} answered wrongly`);
  assert.equal(Object.keys(statuses).filter((s) => Number(s) < 300 || Number(s) >= 500).length, 0, JSON.stringify(statuses));
  // Still alive and counting: nothing crashed, nothing was accepted.
  const metrics = await (await fetch(`${ingress.operatorUrl}/metrics`)).text();
  assert.doesNotMatch(metrics, /wakegate_ingress_accepted_total\{/);
  assert.match(metrics, /wakegate_ingress_refused_total\{source="campaigns",reason="timestamp_expired"\} 40\n/);
  // A valid delivery after the corpus is still accepted (the process survived every case).
  const body = campaignBody(unique('after-corpus'));
  const ok = await post(`${ingress.url}/webhooks/campaigns`, body, standardHeaders(body, 'after-corpus'));
  assert.equal(ok.status, 202, JSON.stringify(ok.json));
  console.log(`corpus: ${cases.length} cases, statuses ${JSON.stringify(statuses)}`);
});
