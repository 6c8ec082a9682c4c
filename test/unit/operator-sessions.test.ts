import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { OperatorSessions } from '../../src/console/operator-sessions';
import { form, FORM, HOST, operatorApp, ROBIN, SAM, signIn, tokenFor } from '../helpers/operator-app';

/*
 * When a signed-in session ends (Fastify's inject, no server, no Temporal). The session cookie is
 * sealed but stateless: it names the operator, a fingerprint of their secret and a session ID, and
 * the listener ends it on sign-out (the ID is revoked in this process), when the operator's secret
 * changes (the fingerprint no longer matches), and a TTL after the sign-in however active it was.
 */

const metrics = (app: FastifyInstance, cookie: string) => app.inject({ method: 'GET', url: '/metrics', headers: { host: HOST, cookie } });

async function signOut(app: FastifyInstance, cookie: string): Promise<void> {
  const { token, cookie: withToken } = await tokenFor(app, cookie);
  const r = await app.inject({ method: 'POST', url: '/logout', headers: { ...FORM, cookie: withToken }, payload: form({ _csrf: token }) });
  assert.equal(r.statusCode, 303, r.body);
  assert.equal(r.headers.location, '/login');
}

describe('a session ends', () => {
  test('on sign-out: a copied cookie (before or after its form token) no longer opens anything; other sessions go on', async () => {
    const { app, touched } = await operatorApp();
    const robin = await signIn(app);
    const { cookie: later } = await tokenFor(app, robin.cookie);
    const other = await signIn(app);
    assert.equal((await metrics(app, robin.cookie)).statusCode, 200);
    await signOut(app, robin.cookie);
    assert.equal((await metrics(app, robin.cookie)).statusCode, 401, 'the cookie copied at sign-in');
    assert.equal((await metrics(app, later)).statusCode, 401, 'the cookie copied after the page gave it a form token');
    const page = await app.inject({ method: 'GET', url: '/supervisor', headers: { host: HOST, cookie: robin.cookie } });
    assert.equal(page.statusCode, 303, 'the page sends it to /login');
    assert.equal((await metrics(app, other.cookie)).statusCode, 200, 'robin’s other session is not this one');
    assert.equal((await metrics(app, (await signIn(app)).cookie)).statusCode, 200, 'robin signs in again');
    assert.equal(touched(), 0);
  });

  test('when the operator’s secret changes: another process (or a restart) with the same session key refuses it; unchanged operators go on', async () => {
    const sessionKey = randomBytes(32);
    const before = await operatorApp({ sessionKey });
    const robin = await signIn(before.app, 'robin', ROBIN);
    const sam = await signIn(before.app, 'sam', SAM);
    const same = await operatorApp({ sessionKey });
    assert.equal((await metrics(same.app, robin.cookie)).statusCode, 200, 'the same key and secrets: the session carries across processes');
    const rotated = await operatorApp({ sessionKey, operators: { robin: 'robin-rotated-secret-0987654321', sam: SAM } });
    assert.equal((await metrics(rotated.app, robin.cookie)).statusCode, 401, 'robin’s secret changed');
    assert.equal((await metrics(rotated.app, sam.cookie)).statusCode, 200, 'sam’s did not');
    const removed = await operatorApp({ sessionKey, operators: { sam: SAM } });
    assert.equal((await metrics(removed.app, robin.cookie)).statusCode, 401, 'robin is no longer an operator');
  });

  test('a TTL after the sign-in, however active: renewing the cookie does not extend it', async () => {
    const { app } = await operatorApp({ sessionTtlS: 2 });
    const { cookie } = await signIn(app);
    await sleep(1200);
    const renewed = await tokenFor(app, cookie);
    assert.notEqual(renewed.cookie, cookie, 'the page renewed the cookie');
    assert.equal((await metrics(app, renewed.cookie)).statusCode, 200);
    await sleep(1000);
    assert.equal((await metrics(app, renewed.cookie)).statusCode, 401, '2.2 s after the sign-in, with a cookie renewed 1 s ago');
  });
});

describe('the revoked sessions', () => {
  test('are bounded: past the bound, every session signed in before is ended rather than one revocation forgotten', async () => {
    const sessions = new OperatorSessions({ robin: ROBIN }, randomBytes(32), 3600, 2);
    const claims = [sessions.open('robin'), sessions.open('robin'), sessions.open('robin')];
    const kept = sessions.open('robin');
    for (const c of claims) assert.equal(sessions.operatorOf(c), 'robin');
    for (const c of claims) sessions.end(c);
    for (const c of claims) assert.equal(sessions.operatorOf(c), undefined, 'every signed-out session stays ended');
    assert.equal(sessions.operatorOf(kept), undefined, 'the overflow ended the sessions signed in before it too');
    await sleep(5);
    assert.equal(sessions.operatorOf(sessions.open('robin')), 'robin', 'a sign-in after it works');
    assert.equal(sessions.revokedCount, 0);
  });

  test('refuse what is not a session of this listener', () => {
    const sessions = new OperatorSessions({ robin: ROBIN }, randomBytes(32), 3600);
    for (const bad of [undefined, 'robin', {}, { name: 'robin' }, { ...sessions.open('robin'), fp: 'x' }, { ...sessions.open('robin'), name: 'sam' }])
      assert.equal(sessions.operatorOf(bad), undefined, JSON.stringify(bad));
    const other = new OperatorSessions({ robin: ROBIN }, randomBytes(32), 3600);
    assert.equal(other.operatorOf(sessions.open('robin')), undefined, 'another session key: another fingerprint');
  });
});
