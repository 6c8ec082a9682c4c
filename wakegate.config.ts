import { createWakegate } from 'wakegate';
import { exampleOptions } from './examples/app';

/**
 * The deployment this checkout runs (`npm start`, `npm run worker`, the `wakegate` CLI): the example
 * agents. Yours is a file like this one in your own package; point WAKEGATE_APP at it.
 */
export default createWakegate(exampleOptions);
