#!/usr/bin/env node
// The `wakegate` command: runs the TypeScript CLI through tsx (no build step).
require('tsx/cjs');
require('../cli/main.ts');
