import type { WebhookSource } from '../source';
import { campaignsSource } from './campaigns';
import { githubSource } from './github';

/** The built-in webhook sources. Add one: a file here with `defineWebhookSource`, listed below. */
export const builtinWebhookSources: readonly WebhookSource<unknown>[] = [campaignsSource, githubSource];
