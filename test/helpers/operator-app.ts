import assert from 'node:assert/strict';
import type { Client } from '@temporalio/client';
import Fastify, { type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Gate } from '../../src/gate/gate';
import { buildIngress } from '../../src/processes/ingress-listeners';
import { formToken, registerOperatorAuth, requireFormProof, type OperatorAuthSettings } from '../../src/console/operator-auth';
import { registerOperatorGuard } from '../../src/console/operator-guard';
import { registerSupervisorPage } from '../../src/console/supervisor-page';
import type { TriggerRegistry } from '../../src/gate/trigger-registry';
import { loadConfig } from '../../src/config/config';

export const ROBIN = 'robin-secret-0123456789';
export const SAM = 'sam-secret-9876543210xyz';
export const ORIGIN = 'http://127.0.0.1:8788';
export const HOST = '127.0.0.1:8788';

/** A Temporal client that counts, and fails, every use: a refused request must never reach it. */
export function untouchableClient(): { client: Client; touched: () => number } {
  let touched = 0;
  const client = new Proxy(
    {},
    {
      get: () => {
        touched++;
        throw new Error('a refused request reached Temporal');
      },
    },
  ) as unknown as Client;
  return { client, touched: () => touched };
}

/**
 * The operator's listener as `buildIngress` builds it (guard, sign-in, supervisor page, trail page,
 * /metrics, /status), without a server or Temporal: no sources, and a client that fails on use.
 */
export async function operatorListener(auth: Partial<OperatorAuthSettings> = {}, logger?: Logger): Promise<{ app: FastifyInstance; touched: () => number }> {
  const { client, touched } = untouchableClient();
  const registry = { get: () => undefined, agents: {} } as unknown as TriggerRegistry;
  const { operator } = buildIngress({
    gate: {} as Gate,
    client,
    registry,
    sources: [],
    secrets: {},
    settings: loadConfig({}).ingress,
    supervisorPage: { taskQueue: 'q' },
    operatorAuth: { operators: {}, sessionTtlS: 3600, ...auth },
    ...(logger ? { logger } : {}),
  });
  await operator.ready();
  return { app: operator, touched };
}

/**
 * The operator's scope as `buildOperatorListener` (src/console/listener.ts) composes it (guard, then sign-in, then the supervisor
 * page), with operators robin and sam, and test-only routes in the same scope: `/metrics`, `/token`
 * (the session's form token, without rendering the page, which reads Temporal) and `POST /probe`
 * (an action behind `requireFormProof` that reaches nothing).
 */
export async function operatorApp(auth: Partial<OperatorAuthSettings> = {}, logger?: Logger): Promise<{ app: FastifyInstance; touched: () => number }> {
  const { client, touched } = untouchableClient();
  const settings: OperatorAuthSettings = { operators: { robin: ROBIN, sam: SAM }, sessionTtlS: 3600, ...auth };
  const app = Fastify({ logger: false });
  await app.register(async (scope) => {
    await registerOperatorGuard(scope, { hostnames: new Set(settings.hostnames ?? []), tls: settings.tls ?? false });
    await registerOperatorAuth(scope, settings, logger);
    registerSupervisorPage(scope, { client, taskQueue: 'q' });
    scope.get('/metrics', async () => 'metrics');
    scope.get('/token', async (request, reply) => ({ token: formToken(request, reply) ?? null }));
    scope.post('/probe', { preHandler: requireFormProof(scope) }, async () => ({ taken: true }));
  });
  await app.ready();
  return { app, touched };
}

export const basic = (name: string, secret: string) => `Basic ${Buffer.from(`${name}:${secret}`).toString('base64')}`;
export const form = (o: Record<string, string>) => new URLSearchParams(o).toString();
export const FORM = { 'content-type': 'application/x-www-form-urlencoded', origin: ORIGIN, host: HOST };

export async function signIn(app: FastifyInstance, name = 'robin', secret = ROBIN): Promise<{ cookie: string; setCookie: string }> {
  const r = await app.inject({ method: 'POST', url: '/login', headers: FORM, payload: form({ name, secret }) });
  assert.equal(r.statusCode, 303, r.body);
  assert.equal(r.headers.location, '/supervisor');
  const setCookie = String(r.headers['set-cookie']);
  return { cookie: setCookie.split(';')[0]!, setCookie };
}

/** The session's form token, and the cookie that now carries its secret. */
export async function tokenFor(app: FastifyInstance, cookie: string, headers: Record<string, string> = {}): Promise<{ token: string; cookie: string }> {
  const r = await app.inject({ method: 'GET', url: '/token', headers: { host: HOST, cookie, ...headers } });
  assert.equal(r.statusCode, 200, r.body);
  const set = r.headers['set-cookie'];
  return { token: r.json<{ token: string }>().token, cookie: set ? String(set).split(';')[0]! : cookie };
}
