import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { loadConfig } from '../../src/config/config';
import { devPorts } from '../../src/cli/dev-target';
import { UsageError } from '../../src/cli/output';

const BIN = path.resolve(__dirname, '..', '..', 'bin', 'wakegate.js');
/** `wakegate ARGS --help`'s text (help is text, not the one JSON object of a command). */
const help = async (...args: string[]) => (await promisify(execFile)(process.execPath, [BIN, ...args, '--help'])).stdout;

/* Every port `wakegate dev` listens on has a flag; a flag left out keeps its variable, else its default. */

const configOf = (env: Record<string, string> = {}) => loadConfig({ TEMPORAL_CONFIG_FILE: '/nonexistent/temporal.toml', ...env });

test('without flags, each port is its variable or its default; the SDK metrics are off', () => {
  assert.deepEqual(devPorts({ server: true }, configOf()), { serverPort: 7233, uiPort: 8233, ingressPort: 8787, operatorPort: 8788 });
  const env = { TEMPORAL_ADDRESS: '127.0.0.1:7400', WAKEGATE_INGRESS_PORT: '9001', WAKEGATE_OPERATOR_PORT: '9002' };
  assert.deepEqual(devPorts({ server: true }, configOf(env)), { serverPort: 7400, uiPort: 8233, ingressPort: 9001, operatorPort: 9002 });
});

test('each flag overrides its variable: gRPC, Web UI, webhooks, operator, SDK metrics', () => {
  const ports = devPorts(
    { server: true, grpcPort: '7501', uiPort: '7502', webhookPort: '7503', operatorPort: '7504', metricsPort: '7505' },
    configOf({ WAKEGATE_INGRESS_PORT: '9001', WAKEGATE_OPERATOR_PORT: '9002' }),
  );
  assert.deepEqual(ports, { serverPort: 7501, uiPort: 7502, ingressPort: 7503, operatorPort: 7504, sdkMetricsAddress: '127.0.0.1:7505' });
  assert.equal(devPorts({ server: true, webhookPort: '0', operatorPort: '0' }, configOf()).ingressPort, 0, '0: any free port');
});

test('a bad port names its flag; the embedded server flags with --no-server are refused; a remote Temporal still is', () => {
  for (const [opts, pattern] of [
    [{ webhookPort: 'http' }, /--webhook-port must be a port number/],
    [{ operatorPort: '70000' }, /--operator-port must be a port number/],
    [{ grpcPort: '0' }, /--grpc-port must be a port number from 1/],
    [{ metricsPort: '-1' }, /--metrics-port must be a port number/],
  ] as const)
    assert.throws(
      () => devPorts({ server: true, ...opts }, configOf()),
      (err: unknown) => err instanceof UsageError && pattern.test(err.message),
    );
  assert.throws(() => devPorts({ server: false, grpcPort: '7501' }, configOf()), /--grpc-port sets a port of the embedded server, which --no-server/);
  assert.throws(() => devPorts({ server: false, uiPort: '7502' }, configOf()), /--ui-port sets a port of the embedded server/);
  assert.deepEqual(devPorts({ server: false, webhookPort: '7503' }, configOf({ TEMPORAL_ADDRESS: 'temporal.example.com:7233' })), {
    uiPort: 8233,
    ingressPort: 7503,
    operatorPort: 8788,
  });
  assert.throws(() => devPorts({ server: true, grpcPort: '7501' }, configOf({ TEMPORAL_ADDRESS: 'temporal.example.com:7233' })), /--no-server/);
});

test('dev --help offers a flag for every port; emit --help says how to redeliver the same event', async () => {
  const dev = await help('dev');
  for (const flag of ['--grpc-port', '--ui-port', '--webhook-port', '--operator-port', '--metrics-port']) assert.match(dev, new RegExp(`${flag} <port>`));
  const emit = await help('emit');
  assert.match(emit, /Redelivering the same event:/);
  assert.match(emit, /same --source, --type, --entity and --occurred-at/);
  assert.match(emit, /exit 7 if it\s+ended\s+failed/);
});
