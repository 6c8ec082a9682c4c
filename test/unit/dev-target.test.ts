import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config/config';
import { embeddedServerPort } from '../../src/cli/dev-target';
import { UsageError } from '../../src/cli/output';
import { runCli } from '../helpers/cli';

/*
 * `wakegate dev` starts its own Temporal dev server and must talk to it alone: a configured Temporal
 * elsewhere (TEMPORAL_ADDRESS, a TOML profile, TLS or an API key) is refused before anything starts,
 * with the way to run against it on purpose (`--no-server`).
 */

const temporalOf = (env: Record<string, string>) => loadConfig({ TEMPORAL_CONFIG_FILE: '/nonexistent/temporal.toml', ...env }).temporal;

describe('the embedded server of wakegate dev', () => {
  test('a loopback address gives its port to the embedded server', () => {
    assert.equal(embeddedServerPort(temporalOf({})), 7233);
    assert.equal(embeddedServerPort(temporalOf({ TEMPORAL_ADDRESS: 'localhost:7300' })), 7300);
    assert.equal(embeddedServerPort(temporalOf({ TEMPORAL_ADDRESS: '127.0.0.1:7301' })), 7301);
    assert.equal(embeddedServerPort(temporalOf({ TEMPORAL_ADDRESS: '[::1]:7302' })), 7302);
  });

  test('an address on another host, or TLS or an API key, is refused, naming the address and --no-server, never the key', () => {
    const refused: Record<string, string>[] = [
      { TEMPORAL_ADDRESS: 'temporal.example.com:7233' },
      { TEMPORAL_ADDRESS: 'prod.a1b2c.tmprl.cloud:7233' },
      { TEMPORAL_ADDRESS: '10.0.0.5:7233' },
      { TEMPORAL_ADDRESS: '0.0.0.0:7233' },
      { TEMPORAL_ADDRESS: 'localhost.example.com:7233' },
      { TEMPORAL_ADDRESS: 'localhost:7233', TEMPORAL_API_KEY: 'key-that-must-not-show' },
      { TEMPORAL_ADDRESS: 'localhost:7233', TEMPORAL_TLS: 'true' },
    ];
    for (const env of refused) {
      assert.throws(
        () => embeddedServerPort(temporalOf(env)),
        (err: Error) => {
          assert.ok(err instanceof UsageError, err.message);
          assert.match(err.message, /--no-server/);
          assert.ok(err.message.includes(env.TEMPORAL_ADDRESS!), err.message);
          assert.doesNotMatch(err.message, /key-that-must-not-show/);
          return true;
        },
        JSON.stringify(env),
      );
    }
  });

  test('a TOML profile that names Temporal Cloud is refused', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'wakegate-profile-'));
    try {
      const file = path.join(dir, 'temporal.toml');
      writeFileSync(file, '[profile.prod]\naddress = "prod.a1b2c.tmprl.cloud:7233"\nnamespace = "prod.a1b2c"\napi_key = "cloud-key-not-shown"\n');
      assert.throws(
        () => embeddedServerPort(loadConfig({ TEMPORAL_CONFIG_FILE: file, TEMPORAL_PROFILE: 'prod' }).temporal),
        /prod\.a1b2c\.tmprl\.cloud:7233.*--no-server/s,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('wakegate dev, run as a subprocess', () => {
  test('with a remote TEMPORAL_ADDRESS it exits 2 before starting anything, saying how to run against it on purpose', async () => {
    // The remote address's port is held here: a dev that went on would fail to start its server on it, not refuse.
    const held = createServer();
    await new Promise<void>((resolve) => held.listen(0, '127.0.0.1', resolve));
    try {
      const port = (held.address() as AddressInfo).port;
      const run = await runCli(['dev'], { TEMPORAL_ADDRESS: `temporal.example.com:${port}`, WAKEGATE_INGRESS_PORT: '0', WAKEGATE_OPERATOR_PORT: '0' });
      assert.equal(run.code, 2, run.stderr);
      const message = (run.json.error as { message: string }).message;
      assert.match(message, new RegExp(`temporal\\.example\\.com:${port}`));
      assert.match(message, /connects to its embedded server only/);
      assert.match(message, /wakegate dev --no-server/);
    } finally {
      held.close();
    }
  });
});
