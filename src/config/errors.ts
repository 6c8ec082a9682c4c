/**
 * The configuration and connection errors, in a module that imports nothing: the CLI's error
 * report tells them apart without loading zod or the Temporal client.
 */

/** Thrown for a setting that does not parse; the message names the variable and the fix. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Temporal did not answer: the message says where we looked and how to start a local server. */
export class TemporalUnreachableError extends Error {
  override name = 'TemporalUnreachableError';
}
