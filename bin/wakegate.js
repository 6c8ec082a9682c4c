#!/usr/bin/env node
// The `wakegate` command: the compiled CLI (lib/cli/main.js, an esbuild bundle of src/cli/main.ts that
// tools/scripts/build-cli.mjs makes during setup). Without it, say how to build it instead of a stack trace.
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
require(built);
