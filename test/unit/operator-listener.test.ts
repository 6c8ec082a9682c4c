import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import pino from 'pino';
import type { FastifyInstance } from 'fastify';
import { loadConfig } from '../../src/config/config';
import { basic, form, FORM, HOST, operatorListener, ROBIN } from '../helpers/operator-app';

/*
 * The operator's listener as buildIngress builds it, through Fastify's inject (no server, no
 * Temporal: its client fails the test on any use). What a rebinding page, a stranger guessing
 * secrets and a malformed action meet before any handler reads Temporal.
 */

describe('the Host allow-list', () => {
  test('a rebinding page’s Host is refused before any handler, with or without operators; IP literals, localhost and configured names pass', async () => {
    for (const operators of [{}, { robin: ROBIN }] as Record<string, string>[]) {
      const { app, touched } = await operatorListener({ operators, hostnames: ['ops.example.com'] });
      const auth = Object.keys(operators).length ? { authorization: basic('robin', ROBIN) } : {};
      const get = (url: string, host: string) => app.inject({ method: 'GET', url, headers: { host, ...auth } });
      for (const host of [
        'attacker.example:8788',
        'attacker.example',
        'localhost.attacker.example:8788',
        'evil@127.0.0.1:8788',
        '127.0.0.1.nip.io:8788',
        '127.0.0.1:8788/x',
      ]) {
        for (const url of ['/status', '/metrics', '/supervisor', '/wakes/a/b', '/login', '/nowhere']) {
          const r = await get(url, host);
          assert.equal(r.statusCode, 421, `${host} ${url}`);
          assert.equal(r.json<{ error: { code: string } }>().error.code, 'unknown_host');
        }
      }
      for (const host of [HOST, '127.0.0.1', 'localhost:8788', 'LOCALHOST:8788', '[::1]:8788', '10.1.2.3:8788', 'ops.example.com', 'Ops.Example.com:443']) {
        assert.equal((await get('/status', host)).statusCode, 200, host);
      }
      assert.equal(touched(), 0);
    }
  });
});

describe('security headers', () => {
  test('every answer forbids framing and sniffing and sends no referrer to another site; the pages’ inline style is allowed, scripts are not', async () => {
    const { app } = await operatorListener({ operators: { robin: ROBIN } });
    for (const r of [
      await app.inject({ method: 'GET', url: '/login', headers: { host: HOST } }),
      await app.inject({ method: 'GET', url: '/status', headers: { host: HOST } }),
    ]) {
      assert.equal(r.headers['x-frame-options'], 'DENY');
      assert.equal(r.headers['x-content-type-options'], 'nosniff');
      assert.equal(r.headers['referrer-policy'], 'same-origin');
      const csp = String(r.headers['content-security-policy']);
      assert.match(csp, /frame-ancestors 'none'/);
      assert.match(csp, /style-src [^;]*'unsafe-inline'/);
      assert.match(csp, /script-src 'none'/);
      assert.doesNotMatch(csp, /upgrade-insecure-requests/, 'plain HTTP on loopback: no upgrade');
      assert.equal(r.headers['strict-transport-security'], undefined);
    }
  });

  test('behind TLS the session cookie is Secure and __Host- prefixed, and HSTS is sent', async () => {
    const { app } = await operatorListener({ operators: { robin: ROBIN }, tls: true });
    const r = await app.inject({ method: 'POST', url: '/login', headers: FORM, payload: form({ name: 'robin', secret: ROBIN }) });
    assert.equal(r.statusCode, 303, r.body);
    const cookie = String(r.headers['set-cookie']);
    assert.match(cookie, /^__Host-wakegate_operator=/);
    assert.match(cookie, /; Secure/i);
    assert.match(cookie, /; Path=\//i);
    assert.doesNotMatch(cookie, /Domain=/i);
    assert.match(String(r.headers['strict-transport-security']), /max-age=/);
  });
});

describe('the sign-in throttle', () => {
  const logged = () => {
    const lines: string[] = [];
    const logger = pino(
      { level: 'info' },
      new Writable({
        write(chunk: Buffer, _enc, cb) {
          lines.push(chunk.toString());
          cb();
        },
      }),
    );
    return { lines, logger };
  };
  const WRONG = 'wrong-secret-not-robins';

  test('a second client failing sign-ins: that client waits (429, even with the right secret), the operator elsewhere still gets in', async () => {
    const { lines, logger } = logged();
    const { app, touched } = await operatorListener({ operators: { robin: ROBIN } }, logger);
    const status = (authorization: string, remoteAddress: string) =>
      app.inject({ method: 'GET', url: '/status', headers: { host: HOST, authorization }, remoteAddress });
    const login = (secret: string, remoteAddress: string) =>
      app.inject({ method: 'POST', url: '/login', headers: FORM, payload: form({ name: 'robin', secret }), remoteAddress });
    // The stranger: five wrong secrets for robin by Basic and by the form, then more.
    for (let i = 0; i < 5; i++) assert.equal((await (i % 2 ? login(WRONG, '10.6.6.6') : status(basic('robin', WRONG), '10.6.6.6'))).statusCode, 401);
    for (let i = 0; i < 5; i++) assert.equal((await status(basic('robin', WRONG), '10.6.6.6')).statusCode, 429, 'past the limit, refused unread');
    const locked = await status(basic('robin', ROBIN), '10.6.6.6');
    assert.equal(locked.statusCode, 429, 'the right secret from the client that failed waits too: a guess is never judged past the limit');
    assert.ok(Number(locked.headers['retry-after']) > 0);
    assert.equal(locked.json<{ error: { code: string } }>().error.code, 'too_many_sign_ins');
    const lockedForm = await login(ROBIN, '10.6.6.6');
    assert.equal(lockedForm.statusCode, 429);
    assert.match(lockedForm.body, /too many failed sign-ins/);
    // The operator, from their own address: in by Basic and by the form.
    assert.equal((await status(basic('robin', ROBIN), '10.0.0.1')).statusCode, 200, 'robin by Basic from another client');
    const signedIn = await login(ROBIN, '10.0.0.2');
    assert.equal(signedIn.statusCode, 303, signedIn.body);
    assert.equal(signedIn.headers.location, '/supervisor');
    // Many strangers, each under its own limit: robin's failures add up across them, robin still gets in.
    for (let c = 0; c < 20; c++) for (let i = 0; i < 4; i++) assert.equal((await status(basic('robin', WRONG), `10.5.0.${c}`)).statusCode, 401);
    assert.equal((await status(basic('robin', ROBIN), '10.0.0.3')).statusCode, 200, 'after 80 failures for robin from 20 clients');
    const failed = lines.map((l) => JSON.parse(l) as { msg: string; operator?: string; client?: string }).filter((l) => l.msg === 'operator sign-in failed');
    assert.equal(failed.length, 5 + 80, 'every failure judged is logged, with the name tried and the client');
    assert.ok(failed.every((l) => l.operator === 'robin' && l.client));
    assert.ok(!lines.join('').includes(WRONG), 'the secret tried is never logged');
    assert.equal(touched(), 0);
  });

  test('one client trying many names waits after ten failures, for every name; other clients do not', async () => {
    const { app } = await operatorListener({ operators: { robin: ROBIN, sam: `${ROBIN}-sam` } });
    for (let i = 0; i < 10; i++) {
      const r = await app.inject({ method: 'POST', url: '/login', headers: FORM, payload: form({ name: `n${i}`, secret: WRONG }), remoteAddress: '10.7.7.7' });
      assert.equal(r.statusCode, 401, `try ${i + 1}`);
    }
    const status = (remoteAddress: string) =>
      app.inject({ method: 'GET', url: '/status', headers: { host: HOST, authorization: basic('sam', `${ROBIN}-sam`) }, remoteAddress });
    assert.equal((await status('10.7.7.7')).statusCode, 429);
    assert.equal((await status('10.7.7.8')).statusCode, 200);
  });

  test('an IPv6 client is counted by its /64: rotating addresses within it does not reset the count', async () => {
    const { app } = await operatorListener({ operators: { robin: ROBIN } });
    const status = (secret: string, remoteAddress: string) =>
      app.inject({ method: 'GET', url: '/status', headers: { host: HOST, authorization: basic('robin', secret) }, remoteAddress });
    for (let i = 1; i <= 5; i++) assert.equal((await status(WRONG, `2001:db8:1:2::${i.toString(16)}`)).statusCode, 401);
    assert.equal((await status(ROBIN, '2001:db8:1:2:ffff::99')).statusCode, 429, 'another address of the same /64');
    assert.equal((await status(ROBIN, '2001:db8:1:3::1')).statusCode, 200, 'another /64');
  });
});

describe('behind a proxy (trustProxy)', () => {
  const WRONG = 'wrong-secret-not-robins';
  const viaProxy = (app: FastifyInstance, secret: string, forwardedFor: string, remoteAddress = '10.0.0.1') =>
    app.inject({
      method: 'GET',
      url: '/status',
      headers: { host: HOST, authorization: basic('robin', secret), 'x-forwarded-for': forwardedFor },
      remoteAddress,
    });

  test('with the proxy trusted, each client behind it is counted apart: a stranger there does not lock the operator out', async () => {
    const { app } = await operatorListener({ operators: { robin: ROBIN }, trustProxy: ['10.0.0.1'] });
    for (let i = 0; i < 12; i++) assert.notEqual((await viaProxy(app, WRONG, '203.0.113.9')).statusCode, 200);
    assert.equal((await viaProxy(app, ROBIN, '203.0.113.9')).statusCode, 429, 'the stranger waits');
    assert.equal((await viaProxy(app, ROBIN, '198.51.100.7')).statusCode, 200, 'the operator behind the same proxy gets in');
    // A client that is not the proxy cannot pick its address by sending the header itself.
    for (let i = 0; i < 12; i++) assert.notEqual((await viaProxy(app, WRONG, '198.51.100.7', '10.0.0.9')).statusCode, 200);
    assert.equal((await viaProxy(app, ROBIN, '198.51.100.7')).statusCode, 200, 'the forged X-Forwarded-For counted against 10.0.0.9, not the operator');
  });

  test('without it, every client behind the proxy is one client (what the setting is for)', async () => {
    const { app } = await operatorListener({ operators: { robin: ROBIN } });
    for (let i = 0; i < 5; i++) assert.equal((await viaProxy(app, WRONG, '203.0.113.9')).statusCode, 401);
    assert.equal((await viaProxy(app, ROBIN, '198.51.100.7')).statusCode, 429);
  });

  test('WAKEGATE_OPERATOR_TRUST_PROXY: the proxies’ addresses or ranges; trusting every hop is refused', () => {
    assert.equal(loadConfig({}).ingress.operatorAuth.trustProxy, undefined);
    assert.deepEqual(loadConfig({ WAKEGATE_OPERATOR_TRUST_PROXY: ' 10.0.0.1, 10.1.0.0/16,loopback, fd00::/8 ' }).ingress.operatorAuth.trustProxy, [
      '10.0.0.1',
      '10.1.0.0/16',
      'loopback',
      'fd00::/8',
    ]);
    for (const bad of ['true', '*', '1', 'proxy.example.com', '10.0.0.0/33'])
      assert.throws(() => loadConfig({ WAKEGATE_OPERATOR_TRUST_PROXY: bad }), /WAKEGATE_OPERATOR_TRUST_PROXY/, bad);
  });
});

describe('action bodies', () => {
  test('a malformed action body is 400 naming the field, never 500, and reaches nothing', async () => {
    const { app, touched } = await operatorListener();
    const json = { ...FORM, 'content-type': 'application/json' };
    const post = (payload: unknown) => app.inject({ method: 'POST', url: '/supervisor/halt', headers: json, payload: JSON.stringify(payload) });
    for (const [payload, field] of [
      [{ who: 42, reason: 'r' }, 'who'],
      [{ who: 'ana', reason: { x: 1 } }, 'reason'],
      [{ who: 'ana', reason: 'r'.repeat(501) }, 'reason'],
      [{ who: 'a'.repeat(101), reason: 'r' }, 'who'],
      [{ who: 'ana', reason: 'r', action: 'explode' }, 'action'],
    ] as const) {
      const r = await post(payload);
      assert.equal(r.statusCode, 400, JSON.stringify(payload).slice(0, 80));
      const body = r.json<{ error: { code: string; message: string; issues: { path: string }[] } }>();
      assert.equal(body.error.code, 'invalid_body');
      assert.deepEqual(
        body.error.issues.map((i) => i.path),
        [field],
      );
    }
    const huge = await post({ who: 'ana', reason: 'r'.repeat(1024 * 1024) });
    assert.equal(huge.statusCode, 413);
    assert.equal(huge.json<{ error: { code: string } }>().error.code, 'too_large');
    assert.equal(touched(), 0);
  });
});
