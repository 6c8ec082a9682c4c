#!/usr/bin/env node
// The `wakegate` command: the compiled CLI (lib/cli/main.js, an esbuild bundle of src/cli/main.ts that
// tools/scripts/build-cli.mjs makes during setup). Without it, say how to build it instead of a stack trace.
// `emit` first asks a resident process (lib/cli/resident-link.js, node built-ins only), which answers
// without loading the deployment and the Temporal client again; the CLI runs it here when none can.
'use strict';
const path = require('node:path');
const fs = require('node:fs');

const built = path.join(__dirname, '..', 'lib', 'cli', 'main.js');
if (!fs.existsSync(built)) {
  process.stderr.write(
    `wakegate: the compiled CLI is missing (${path.relative(process.cwd(), built) || built}).\n` +
      "Build it with 'npm run build' (or any of npm start, npm test, npm run typecheck, which build it first).\n",
  );
  process.exit(1);
}
const link = path.join(__dirname, '..', 'lib', 'cli', 'resident-link.js');
if (process.argv[2] === 'emit' && fs.existsSync(link)) {
  require(link)
    .emitViaResident(process.argv.slice(2), built, __filename)
    .then(
      (/** @type {number | undefined} */ code) => (code === undefined ? require(built) : (process.exitCode = code)),
      () => require(built),
    );
} else {
  require(built);
}
