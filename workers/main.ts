import { runWorker } from '../src/processes/worker';

/**
 * A wake worker alone (`npm run worker`; `wakegate worker` is the same): connects with Temporal's own
 * settings (TEMPORAL_ADDRESS, profiles, TLS, API key), runs the deployment in WAKEGATE_APP on
 * WAKEGATE_TASK_QUEUE, and on SIGTERM or SIGINT drains and exits 0.
 */
runWorker().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
