import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import pino from 'pino';
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
  test('failed sign-ins per name and per client are throttled (429, even for the right secret), and logged with the name tried, never the secret', async () => {
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
    const { app, touched } = await operatorListener({ operators: { robin: ROBIN, sam: `${ROBIN}-sam` } }, logger);
    const wrong = 'wrong-secret-not-robins';
    let client = 0;
    const status = (authorization: string, remoteAddress = `10.0.0.${++client}`) =>
      app.inject({ method: 'GET', url: '/status', headers: { host: HOST, authorization }, remoteAddress }).then((r) => r);
    // Per name: 5 failures for robin (each from its own client), then even robin's secret waits.
    for (let i = 0; i < 5; i++) assert.equal((await status(basic('robin', wrong))).statusCode, 401, `try ${i + 1}`);
    const locked = await status(basic('robin', ROBIN));
    assert.equal(locked.statusCode, 429);
    assert.ok(Number(locked.headers['retry-after']) > 0);
    assert.equal(locked.json<{ error: { code: string } }>().error.code, 'too_many_sign_ins');
    assert.equal((await status(basic('sam', `${ROBIN}-sam`))).statusCode, 200, 'another operator is not locked out');
    // The sign-in form counts against the same name.
    const login = await app.inject({
      method: 'POST',
      url: '/login',
      headers: FORM,
      payload: form({ name: 'robin', secret: ROBIN }),
      remoteAddress: '10.9.9.9',
    });
    assert.equal(login.statusCode, 429);
    assert.ok(Number(login.headers['retry-after']) > 0);
    assert.match(login.body, /too many failed sign-ins/);
    // Per client: 10 failures from one address, any names, then that client waits.
    for (let i = 0; i < 10; i++) {
      const r = await app.inject({ method: 'POST', url: '/login', headers: FORM, payload: form({ name: `n${i}`, secret: wrong }), remoteAddress: '10.7.7.7' });
      assert.equal(r.statusCode, 401, `try ${i + 1}`);
    }
    assert.equal((await status(basic('sam', `${ROBIN}-sam`), '10.7.7.7')).statusCode, 429);
    assert.equal((await status(basic('sam', `${ROBIN}-sam`), '10.7.7.8')).statusCode, 200);
    const failed = lines.map((l) => JSON.parse(l) as { msg: string; operator?: string }).filter((l) => l.msg === 'operator sign-in failed');
    assert.equal(failed.length, 15);
    assert.deepEqual(new Set(failed.map((l) => l.operator)), new Set(['robin', ...Array.from({ length: 10 }, (_, i) => `n${i}`)]));
    assert.ok(!lines.join('').includes(wrong), 'the secret tried is never logged');
    assert.equal(touched(), 0);
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
