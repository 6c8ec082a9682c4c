import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { Client, Connection } from '@temporalio/client';
import Fastify, { type FastifyInstance } from 'fastify';
import { Registry } from 'prom-client';
import { setTimeout as sleep } from 'node:timers/promises';
import type { AgentRegistry } from '../../src/agents/registry';
import type { Gate } from '../../src/gate/gate';
import type { TriggerRegistry } from '../../src/gate/trigger-registry';
import { buildIngress } from '../../src/processes/ingress-listeners';
import { loadConfig } from '../../src/config/config';
import { HOST } from '../helpers/operator-app';
import { registerShadowMetrics } from '../../src/console/shadow-metrics';

/*
 * `/metrics` on the operator's listener never waits on Temporal: the live shadows' counts are read
 * in the background, each read under a deadline, and a scrape answers from the last figures with
 * their age and a stale flag. No server: a visibility that stalls, and a client on a closed port.
 */

const agents = { reporter: { shadow: { sample: 1 }, policy: { name: 'reporter' } } } as unknown as AgentRegistry;

/** A client whose visibility counts never answer (or answer `answer`), counting the calls. */
function visibility(answer?: () => Promise<{ count: number }>) {
  let calls = 0;
  const client = {
    workflow: {
      count: () => {
        calls++;
        return answer ? answer() : new Promise<never>(() => undefined);
      },
    },
    withDeadline: <R>(_deadline: number, fn: () => Promise<R>) => fn(),
    withAbortSignal: <R>(_signal: AbortSignal, fn: () => Promise<R>) => fn(),
  } as unknown as Client;
  return { client, calls: () => calls };
}

async function listener(client: Client): Promise<FastifyInstance> {
  const registry = { get: () => undefined, agents } as unknown as TriggerRegistry;
  const { operator } = buildIngress({
    gate: {} as Gate,
    client,
    registry,
    sources: [],
    secrets: {},
    settings: loadConfig({}).ingress,
    operatorAuth: { operators: {}, sessionTtlS: 3600 },
  });
  await operator.ready();
  return operator;
}

/** The scrape, or a failure once a second has passed without an answer. */
async function scrapeWithinASecond(app: FastifyInstance): Promise<{ body: string; ms: number }> {
  const t0 = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('/metrics did not answer within a second')), 1000);
  });
  try {
    const r = await Promise.race([app.inject({ method: 'GET', url: '/metrics', headers: { host: HOST } }), late]);
    assert.equal(r.statusCode, 200, r.body);
    return { body: r.body, ms: performance.now() - t0 };
  } finally {
    clearTimeout(timer);
  }
}

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('/metrics with visibility unreachable', () => {
  test('a count that never answers: every scrape answers within a second, the shadow figures marked stale', async () => {
    const { client } = visibility();
    const app = await listener(client);
    try {
      for (let i = 0; i < 3; i++) {
        const { body } = await scrapeWithinASecond(app);
        assert.match(body, /wakegate_shadow_runs_stale\{agent="reporter"\} 1\b/);
        assert.doesNotMatch(body, /wakegate_shadow_runs\{/, 'no figures were ever read');
        assert.match(body, /wakegate_ingress_in_flight/, 'the other figures are there');
      }
    } finally {
      await app.close();
    }
  });

  test('a client on a closed port: the scrape answers within a second', async () => {
    const connection = Connection.lazy({ address: `127.0.0.1:${await closedPort()}` });
    const app = await listener(new Client({ connection }));
    try {
      const { body } = await scrapeWithinASecond(app);
      assert.match(body, /wakegate_shadow_runs_stale\{agent="reporter"\} 1\b/);
    } finally {
      await app.close();
      await connection.close();
    }
  });
});

describe('the shadow figures behind /metrics', () => {
  /** The refresher alone, on a registry of its own, with short times. */
  async function figures(client: Client, timing = { refreshMs: 100, deadlineMs: 50, staleAfterMs: 300 }) {
    const app = Fastify();
    const registry = new Registry();
    registerShadowMetrics(app, registry, client, agents, timing);
    await app.ready();
    return { app, scrape: () => registry.metrics() };
  }

  test('read in the background: a scrape shows the last figures, their age and not stale; once reads fail for long, stale with the last figures kept', async () => {
    let n = 7;
    let down = false;
    const { client, calls } = visibility(() => (down ? Promise.reject(new Error('visibility down')) : Promise.resolve({ count: n })));
    const { app, scrape } = await figures(client);
    try {
      await sleep(30);
      let body = await scrape();
      assert.match(body, /wakegate_shadow_runs\{agent="reporter",outcome="running"\} 7\b/);
      assert.match(body, /wakegate_shadow_runs_stale\{agent="reporter"\} 0\b/);
      assert.match(body, /wakegate_shadow_runs_age_seconds\{agent="reporter"\} 0\.0\d*/);
      n = 9;
      await sleep(150);
      assert.match(await scrape(), /outcome="running"\} 9\b/, 'refreshed without a scrape asking');
      const before = calls();
      for (let i = 0; i < 20; i++) await scrape();
      assert.equal(calls(), before, 'a scrape reads nothing');
      down = true;
      await sleep(450);
      body = await scrape();
      assert.match(body, /outcome="running"\} 9\b/, 'the last figures are kept');
      assert.match(body, /wakegate_shadow_runs_stale\{agent="reporter"\} 1\b/);
      const age = Number(/wakegate_shadow_runs_age_seconds\{agent="reporter"\} ([\d.]+)/.exec(body)?.[1]);
      assert.ok(age >= 0.3, `age ${age}`);
    } finally {
      await app.close();
    }
  });

  test('a read that stalls is given up at its deadline: the next refresh reads again; closing the listener stops the reads', async () => {
    const { client, calls } = visibility();
    const { app } = await figures(client);
    await sleep(20);
    assert.equal(calls(), 4, 'one read: four counts');
    await sleep(230);
    assert.ok(calls() >= 8, `the stalled read was given up and read again: ${calls()} counts`);
    await app.close();
    const after = calls();
    await sleep(250);
    assert.equal(calls(), after, 'no read after the close');
  });
});
