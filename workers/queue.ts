import { runQueue } from '../src/processes/queue';

/**
 * The queue consumer alone (`wakegate queue` is the same): the Redis streams of WAKEGATE_REDIS_URL
 * into the gate; on SIGTERM or SIGINT it drains and exits 0.
 */
runQueue().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
