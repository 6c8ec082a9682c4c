import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { operatorFor } from '../../src/console/operator-auth';
import { actingName } from '../../src/console/supervisor-page';
import { basic, form, FORM, HOST, operatorApp, ROBIN, SAM, signIn, tokenFor } from '../helpers/operator-app';
import { ConfigError, parseOperators } from '../../src/config/config';

/*
 * The operator listener's sign-in, in process (Fastify's inject, no server, no Temporal): every
 * refusal happens before a handler runs, so the stand-in Temporal client below, which fails the test
 * on any use, is never touched by a request that is refused. What a signed-in operator does through
 * the page against the real supervisor is test/processes/supervisor-page.test.ts, in Chromium.
 */

const tokenOf = async (app: FastifyInstance, cookie: string) => (await tokenFor(app, cookie)).token;

describe('the operator listener without credentials', () => {
  test('the stranger’s curl (hand-written Origin, free-text who) is 401 and changes nothing; the page sends to /login', async () => {
    const { app, touched } = await operatorApp();
    const halt = await app.inject({ method: 'POST', url: '/supervisor/halt', headers: FORM, payload: form({ who: 'stranger', reason: 'no login needed' }) });
    assert.equal(halt.statusCode, 401);
    assert.equal(halt.headers['www-authenticate'], undefined, 'it says it is a browser (Origin): no Basic challenge');
    const curl = await app.inject({ method: 'POST', url: '/supervisor/halt', headers: { host: HOST }, payload: { reason: 'r' } });
    assert.equal(curl.statusCode, 401);
    assert.match(curl.headers['www-authenticate'] as string, /^Basic realm="wakegate operator"/);
    for (const url of ['/supervisor/reset', '/supervisor/release', '/supervisor/drain']) {
      assert.equal((await app.inject({ method: 'POST', url, headers: FORM, payload: form({ who: 'x', reason: 'y' }) })).statusCode, 401, url);
    }
    assert.equal((await app.inject({ method: 'GET', url: '/metrics' })).statusCode, 401);
    const page = await app.inject({ method: 'GET', url: '/supervisor' });
    assert.equal(page.statusCode, 303);
    assert.equal(page.headers.location, '/login');
    // The rollouts' pages are behind the same sign-in (a browser's navigation is sent to /login).
    for (const url of ['/rollouts', '/rollouts/canary']) assert.equal((await app.inject({ method: 'GET', url })).statusCode, 401, url);
    assert.match((await app.inject({ method: 'GET', url: '/login' })).body, /<form method="post" action="\/login"/);
    assert.equal(touched(), 0);
  });

  test('a corpus of bad credentials: 401 each, nothing reached', async () => {
    const { app, touched } = await operatorApp();
    const headers = [
      basic('robin', 'wrong-secret-0123456789'),
      basic('nobody', ROBIN),
      basic('robin', ''),
      basic('', ''),
      basic('robin', SAM), // another operator's secret
      'Basic not-base64!!',
      'Basic',
      `Bearer ${ROBIN}`,
    ];
    // Each from its own client address: the sign-in throttle (test/unit/operator-forms.test.ts) is not what this is about.
    let client = 0;
    const remoteAddress = () => `10.0.0.${++client}`;
    for (const authorization of headers) {
      const r = await app.inject({
        method: 'POST',
        url: '/supervisor/halt',
        headers: { ...FORM, authorization },
        payload: form({ reason: 'x' }),
        remoteAddress: remoteAddress(),
      });
      assert.equal(r.statusCode, 401, authorization);
    }
    for (const [name, secret] of [
      ['robin', 'wrong'],
      ['nobody', ROBIN],
      ['robin', SAM],
      ['', ''],
    ] as const) {
      const r = await app.inject({ method: 'POST', url: '/login', headers: FORM, payload: form({ name, secret }), remoteAddress: remoteAddress() });
      assert.equal(r.statusCode, 401, `${name}:${secret}`);
      assert.equal(r.headers['set-cookie'], undefined, 'no session for a failed sign-in');
    }
    assert.equal(touched(), 0);
  });

  test('Basic credentials of a configured operator pass (scripts, metric scrapers)', async () => {
    const { app } = await operatorApp();
    const r = await app.inject({ method: 'GET', url: '/metrics', headers: { authorization: basic('sam', SAM) } });
    assert.equal(r.statusCode, 200);
    assert.equal(r.body, 'metrics');
  });
});

describe('a signed-in session', () => {
  test('the session cookie is HttpOnly and SameSite=Strict, and opens the operator’s paths', async () => {
    const { app } = await operatorApp();
    const { cookie, setCookie } = await signIn(app);
    assert.match(setCookie, /HttpOnly/i);
    assert.match(setCookie, /SameSite=Strict/i);
    assert.equal((await app.inject({ method: 'GET', url: '/metrics', headers: { cookie } })).statusCode, 200);
    assert.ok((await tokenOf(app, cookie)).length > 10);
  });

  test('a form post needs the page’s origin and its CSRF token: without, forged or replayed, 403 and nothing reached', async () => {
    const { app, touched } = await operatorApp();
    const robin = await signIn(app);
    const robinToken = await tokenOf(app, robin.cookie);
    const post = (headers: Record<string, string>, body: Record<string, string>) =>
      app.inject({ method: 'POST', url: '/supervisor/halt', headers: { ...FORM, cookie: robin.cookie, ...headers }, payload: form({ reason: 'r', ...body }) });
    assert.equal((await post({}, {})).statusCode, 403, 'no CSRF token');
    assert.equal((await post({ origin: 'http://evil.example' }, {})).statusCode, 403, 'a forged Origin, signed in, no CSRF token');
    assert.equal((await post({}, { _csrf: 'forged-token' })).statusCode, 403, 'a made-up token');
    assert.equal((await post({ origin: 'http://evil.example' }, { _csrf: robinToken })).statusCode, 403, 'a forged Origin with a valid token');
    assert.equal((await post({ origin: 'null' }, { _csrf: robinToken })).statusCode, 403, 'a sandboxed frame');
    // Replayed: a token of another session (sam's) is not robin's.
    const sam = await signIn(app, 'sam', SAM);
    assert.equal((await post({}, { _csrf: await tokenOf(app, sam.cookie) })).statusCode, 403, 'another session’s token');
    // Replayed: a token minted before this sign-in does not survive it (the session is regenerated).
    const again = await app.inject({
      method: 'POST',
      url: '/login',
      headers: { ...FORM, cookie: robin.cookie },
      payload: form({ name: 'robin', secret: ROBIN }),
    });
    const renewed = String(again.headers['set-cookie']).split(';')[0]!;
    const r = await app.inject({
      method: 'POST',
      url: '/supervisor/halt',
      headers: { ...FORM, cookie: renewed },
      payload: form({ reason: 'r', _csrf: robinToken }),
    });
    assert.equal(r.statusCode, 403, 'a token from before the sign-in');
    assert.equal(touched(), 0);
  });

  test('an expired session is 401 and reaches nothing', async () => {
    const { app, touched } = await operatorApp({ sessionTtlS: 1 });
    const { cookie } = await signIn(app);
    const token = await tokenOf(app, cookie);
    await sleep(2100);
    assert.equal((await app.inject({ method: 'GET', url: '/metrics', headers: { cookie } })).statusCode, 401);
    const r = await app.inject({ method: 'POST', url: '/supervisor/halt', headers: { ...FORM, cookie }, payload: form({ reason: 'r', _csrf: token }) });
    assert.equal(r.statusCode, 401);
    assert.equal(touched(), 0);
  });
});

test('the audit’s name: the signed-in operator; on an open listener the typed name, marked, and an empty one stays empty (refused)', () => {
  assert.equal(actingName({ name: 'robin', via: 'session' }, 'someone else'), 'robin');
  assert.equal(actingName({ name: 'sam', via: 'basic' }, undefined), 'sam');
  assert.equal(actingName({ via: 'open' }, ' ana '), 'ana (not signed in)');
  assert.equal(actingName({ via: 'open' }, '   '), '');
  assert.equal(operatorFor({ robin: ROBIN }, 'robin', ROBIN), 'robin');
  assert.equal(operatorFor({ robin: ROBIN }, 'robin', `${ROBIN}x`), undefined);
});

test('WAKEGATE_OPERATORS: name:secret pairs; a bad entry fails naming it, never the secret', () => {
  assert.deepEqual(parseOperators(`robin:${ROBIN}, sam:${SAM}`), { robin: ROBIN, sam: SAM });
  assert.deepEqual(parseOperators(''), {});
  assert.throws(
    () => parseOperators('robin:short'),
    (err: Error) => err instanceof ConfigError && /entry 1 \(robin\): the secret must be at least 16/.test(err.message) && !err.message.includes('short'),
  );
  assert.throws(() => parseOperators(`robin:${ROBIN},robin:${SAM}`), /named twice/);
  assert.throws(() => parseOperators(`no secret here`), /entry 1: write name:secret/);
});
