import { DefaultLogger, Runtime, makeTelemetryFilterString, type LogEntry, type LogLevel } from '@temporalio/worker';

/**
 * What the SDK's native core says about the test server rather than about the code under test: the
 * time-skipping server does not advertise that it keeps an activity's last heartbeat details when
 * the activity fails, which the core warns about once per worker. No wakegate test relies on those
 * details (a retried activity resumes from its own progress).
 */
const SERVER_NOTICES = [/activity_failure_include_heartbeat/];

/**
 * Install the Temporal runtime for a test process: the SDK's logs and the native core's (forwarded)
 * at `level` and above on stderr, less the test server's notices above, so a passing test prints
 * nothing and a failing one prints what failed. Call it once, before any worker or connection.
 * Throws as `Runtime.install` does when a runtime is already installed.
 * @param level the lowest level printed; default `WARN`
 */
export function installTestRuntime(level: LogLevel = 'WARN'): void {
  const stderr = new DefaultLogger(level);
  const logger = new DefaultLogger(level, (entry: LogEntry) => {
    if (SERVER_NOTICES.some((notice) => notice.test(entry.message))) return;
    stderr.log(entry.level, entry.message, entry.meta);
  });
  Runtime.install({ logger, telemetryOptions: { logging: { filter: makeTelemetryFilterString({ core: level }), forward: {} } } });
}
