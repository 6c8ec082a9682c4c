import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mayChallenge } from '../../src/console/operator-auth';
import { basic, form, FORM, HOST, operatorApp, operatorListener, ORIGIN, ROBIN, signIn, tokenFor } from '../helpers/operator-app';

/*
 * Forged posts from a browser (Fastify's inject, no server, no Temporal): a browser is never asked
 * for Basic credentials, a request that says it comes from a browser passes the origin and CSRF
 * checks whatever its credentials, and a form token is good for one post.
 */

const BROWSER_NAV = { host: HOST, accept: 'text/html,application/xhtml+xml,*/*;q=0.8', 'sec-fetch-mode': 'navigate', 'sec-fetch-site': 'none' };

describe('a browser is never asked for Basic credentials', () => {
  test('a page load goes to /login, a browser’s other requests get 401 without a challenge; curl and scripts still get one', async () => {
    const { app, touched } = await operatorListener({ operators: { robin: ROBIN } });
    for (const url of ['/supervisor', '/metrics', '/status', '/wakes/a/b']) {
      const r = await app.inject({ method: 'GET', url, headers: BROWSER_NAV });
      assert.equal(r.statusCode, 303, url);
      assert.equal(r.headers.location, '/login');
      assert.equal(r.headers['www-authenticate'], undefined, url);
    }
    const browserish = [
      { origin: ORIGIN },
      { referer: `${ORIGIN}/supervisor` },
      { 'sec-fetch-mode': 'cors', 'sec-fetch-site': 'cross-site' },
      { 'sec-fetch-dest': 'image' },
      { accept: 'text/html' },
    ];
    for (const headers of browserish) {
      for (const method of ['GET', 'POST'] as const) {
        const r = await app.inject({ method, url: method === 'GET' ? '/metrics' : '/supervisor/halt', headers: { host: HOST, ...headers } });
        assert.equal(r.statusCode, method === 'GET' && headers.accept ? 303 : 401, JSON.stringify(headers));
        assert.equal(r.headers['www-authenticate'], undefined, JSON.stringify(headers));
      }
    }
    const curl = await app.inject({ method: 'GET', url: '/metrics', headers: { host: HOST, accept: '*/*', 'user-agent': 'curl/8' } });
    assert.equal(curl.statusCode, 401);
    assert.match(String(curl.headers['www-authenticate']), /^Basic realm="wakegate operator"/);
    assert.equal(curl.json<{ error: { code: string } }>().error.code, 'unauthenticated');
    assert.equal(mayChallenge({ accept: 'application/json' }), true);
    assert.equal(touched(), 0);
  });

  test('Basic credentials a browser cached do not pass a forged post: Origin or Sec-Fetch-Site means the origin and CSRF checks apply', async () => {
    const { app, touched } = await operatorListener({ operators: { robin: ROBIN } });
    const authorization = basic('robin', ROBIN);
    const halt = (headers: Record<string, string>, body: Record<string, string> = {}) =>
      app.inject({
        method: 'POST',
        url: '/supervisor/halt',
        headers: { 'content-type': 'application/x-www-form-urlencoded', host: HOST, authorization, ...headers },
        payload: form({ reason: 'forged', ...body }),
      });
    const forged = await halt({ origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' });
    assert.equal(forged.statusCode, 403);
    assert.equal(forged.json<{ error: { code: string } }>().error.code, 'cross_origin');
    assert.equal((await halt({ 'sec-fetch-site': 'cross-site' })).statusCode, 403, 'Sec-Fetch-Site alone (no Origin)');
    assert.equal((await halt({ origin: 'null' })).statusCode, 403, 'a sandboxed frame');
    const sameOrigin = await halt({ origin: ORIGIN, 'sec-fetch-site': 'same-origin' });
    assert.equal(sameOrigin.statusCode, 403, 'from the page itself but without a form token');
    assert.equal(sameOrigin.json<{ error: { code: string } }>().error.code, 'csrf');
    assert.equal(touched(), 0);
  });

  test('a script with Basic credentials and neither header still acts', async () => {
    const { app, touched } = await operatorApp();
    const r = await app.inject({ method: 'POST', url: '/probe', headers: { host: HOST, authorization: basic('robin', ROBIN) }, payload: { reason: 'cli' } });
    assert.equal(r.statusCode, 200, r.body);
    assert.deepEqual(r.json(), { taken: true });
    assert.equal(touched(), 0);
  });
});

describe('a form token', () => {
  test('is good for one post: sent again, with the old cookie or the new one, it is 403', async () => {
    const { app } = await operatorApp();
    const signed = await signIn(app);
    const { token, cookie } = await tokenFor(app, signed.cookie);
    const post = (c: string) => app.inject({ method: 'POST', url: '/probe', headers: { ...FORM, cookie: c }, payload: form({ reason: 'r', _csrf: token }) });
    const first = await post(cookie);
    assert.equal(first.statusCode, 200, first.body);
    const after = String(first.headers['set-cookie'] ?? '').split(';')[0] || cookie;
    assert.notEqual(after, cookie, 'the session’s CSRF secret was replaced');
    for (const c of [cookie, after]) {
      const replay = await post(c);
      assert.equal(replay.statusCode, 403, c === cookie ? 'the cookie the first post was sent with' : 'the cookie the browser now has');
      assert.equal(replay.json<{ error: { code: string } }>().error.code, 'csrf');
    }
    // A fresh token from the page works once more.
    const next = await tokenFor(app, after);
    const again = await app.inject({
      method: 'POST',
      url: '/probe',
      headers: { ...FORM, cookie: next.cookie },
      payload: form({ reason: 'r', _csrf: next.token }),
    });
    assert.equal(again.statusCode, 200, again.body);
  });
});
