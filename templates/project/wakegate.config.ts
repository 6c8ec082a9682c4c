import path from 'node:path';
import { createWakegate } from 'wakegate';
import { deployment } from './src/deployment';

/**
 * The deployment: what `npm start` (`wakegate dev`), the worker and every `wakegate` command run.
 * Another file can be named with WAKEGATE_APP; a compiled `.js` one needs no TypeScript loader.
 */
export default createWakegate(deployment({ labelsFile: path.join(process.cwd(), '.wakegate', 'labels.jsonl') }));
