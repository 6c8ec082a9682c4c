import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Webhook } from 'standardwebhooks';
import { loadConfig } from '../../src/config/config';
import { startIngress } from '../../src/processes/ingress-listeners';
import { secretVariable } from '../../src/trigger/webhook/source';
import { campaignsSource } from '../../examples/campaigns-webhook';
import { appOf } from '../helpers/app';
import { untouchableClient } from '../helpers/operator-app';

/*
 * A source's dev secret is published (in examples/ and the docs): the ingress uses it, when asked
 * (`npm start`, `wakegate dev`), on a loopback listener only. Real listeners, no Temporal: the client
 * fails the test on any use, and a refused delivery never reaches it.
 */

const app = appOf();
const start = (host: string, secrets: Record<string, string> = {}) => {
  const { client, touched } = untouchableClient();
  const config = { ...loadConfig({}).ingress, host, port: 0, operatorPort: 0, secrets };
  return { touched, ingress: startIngress({ client, taskQueue: 'q', registry: app.registry, sources: [campaignsSource], config, allowDevSecrets: true }) };
};

describe('dev secrets and the ingress bind address', () => {
  test('on loopback an unset secret falls back to the dev secret, and says so', async () => {
    const ingress = await start('127.0.0.1').ingress;
    try {
      assert.deepEqual(ingress.devSecretSources, ['campaigns']);
      assert.match(ingress.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    } finally {
      await ingress.close();
    }
  });

  test('on a non-loopback address an unset secret is a start-up error naming the variable and why', async () => {
    // One that starts anyway is closed before the test fails, so that the file still ends.
    const err = await start('0.0.0.0').ingress.then(
      async (started) => {
        await started.close();
        assert.fail(`an ingress on 0.0.0.0 started with the dev secret of ${started.devSecretSources.join(', ')}`);
      },
      (e: unknown) => e as Error,
    );
    assert.ok(err.message.includes(secretVariable('campaigns')), err.message);
    assert.match(err.message, /loopback/);
  });

  test('on a non-loopback address a delivery signed with the dev secret is refused (401), and the URL names the real bind address', async () => {
    const { ingress: starting, touched } = start('0.0.0.0', { [secretVariable('campaigns')]: 'whsec_b3BlcmF0b3Itb3duLXNlY3JldC0wMQ==' });
    const ingress = await starting;
    try {
      assert.deepEqual(ingress.devSecretSources, []);
      assert.match(ingress.url, /^http:\/\/0\.0\.0\.0:\d+$/);
      const port = new URL(ingress.url).port;
      const body = JSON.stringify({ campaign: 'spring-sale', kind: 'budget_changed', at: new Date().toISOString() });
      const at = new Date();
      const res = await fetch(`http://127.0.0.1:${port}/webhooks/campaigns`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'webhook-id': 'msg-dev-secret',
          'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
          'webhook-signature': new Webhook(campaignsSource.devSecret).sign('msg-dev-secret', at, body),
        },
        body,
      });
      assert.equal(res.status, 401, await res.text());
      assert.equal(touched(), 0);
    } finally {
      await ingress.close();
    }
  });
});
