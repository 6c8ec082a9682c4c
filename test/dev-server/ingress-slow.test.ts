import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { useDevEnv, unique } from '../helpers/env';
import { campaignBody, post, standardHeaders, startTestIngress } from '../helpers/ingress';

const env = useDevEnv();

/** A client that sends its request a byte at a time: `body` dribbles a declared body, `headers` never finishes its headers. */
function dribbler(base: string, path: string, what: 'body' | 'headers') {
  const { hostname, port } = new URL(base);
  const socket: Socket = connect({ host: hostname, port: Number(port) });
  socket.setNoDelay(true);
  let answer = '';
  socket.on('data', (d) => (answer += d.toString()));
  socket.on('error', () => undefined);
  const opened = Date.now();
  const closed = new Promise<{ afterMs: number; answer: string }>((resolve) => socket.once('close', () => resolve({ afterMs: Date.now() - opened, answer })));
  socket.once('connect', () => {
    const head = `POST ${path} HTTP/1.1\r\nHost: ${hostname}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n`;
    socket.write(what === 'body' ? `${head}\r\n{` : `${head}X-Slow: `);
  });
  const timer = setInterval(() => socket.writable && socket.write(what === 'body' ? ' ' : 'x'), 100);
  void closed.then(() => clearInterval(timer));
  return { closed, end: () => socket.destroy() };
}

test('slow clients over the in-flight cap: a signed webhook is still accepted, and each slow socket is cut by the timeouts', async () => {
  const taskQueue = unique('ingress-slow');
  const ingress = await startTestIngress(env, taskQueue, { maxInFlight: 4, requestTimeoutMs: 2000, headersTimeoutMs: 1000, idleTimeoutMs: 10_000 });
  const slow = [
    ...Array.from({ length: 12 }, () => dribbler(ingress.url, '/webhooks/campaigns', 'body')),
    dribbler(ingress.url, '/webhooks/campaigns', 'headers'),
    dribbler(ingress.operatorUrl, '/supervisor', 'headers'),
  ];
  try {
    await new Promise((r) => setTimeout(r, 300)); // every slow socket has sent its headers and started on its body
    const body = campaignBody(unique('slow'));
    const signed = await post(`${ingress.url}/webhooks/campaigns`, body, standardHeaders(body, unique('slow-msg')));
    assert.equal(signed.status, 202, JSON.stringify(signed.json));

    // Each slow socket is answered 408 and closed by its timeout, though it never stopped sending.
    const cut = await Promise.race([
      Promise.all(slow.map((s) => s.closed)),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('a slow socket was still open after 6 s')), 6000)),
    ]);
    for (const [i, c] of cut.entries()) assert.match(c.answer, /^HTTP\/1\.1 408 /, `${i} after ${c.afterMs}: ${c.answer}`);
    const bodies = cut.slice(0, 12).map((c) => c.afterMs);
    assert.ok(
      bodies.every((ms) => ms >= 1900 && ms < 4000),
      `dribbled bodies cut after ${bodies.join(', ')} ms (request timeout 2000)`,
    );
    for (const c of cut.slice(12)) assert.ok(c.afterMs >= 900 && c.afterMs < 3000, `dribbled headers cut after ${c.afterMs} ms (headers timeout 1000)`);

    const metrics = await (await fetch(`${ingress.operatorUrl}/metrics`)).text();
    assert.doesNotMatch(metrics, /wakegate_ingress_shed_total\{source="campaigns",reason="in_flight"/);
    assert.match(metrics, /wakegate_ingress_in_flight 0\n/);
  } finally {
    for (const s of slow) s.end();
    await ingress.close();
  }
});
