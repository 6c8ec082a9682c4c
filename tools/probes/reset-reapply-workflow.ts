import { condition, defineQuery, defineSignal, defineUpdate, setHandler } from '@temporalio/workflow';

/** An offer taken by update: the handler records it and answers how many the workflow holds. */
export const offerUpdate = defineUpdate<number, [string]>('offerUpdate');
/** An offer taken by update whose handler waits for `release` before it answers (a caller left waiting). */
export const slowOfferUpdate = defineUpdate<number, [string]>('slowOfferUpdate');
/** An offer taken by signal. */
export const offerSignal = defineSignal<[string]>('offerSignal');
/** Lets every waiting slowOfferUpdate answer. */
export const releaseSignal = defineSignal('release');
/** The offers this run holds, in the order it took them. */
export const offersQuery = defineQuery<string[]>('offers');

/** tools/probes/reset-reapply.ts's workflow: it takes offers by update and by signal and holds them for an hour. */
export async function offersWorkflow(): Promise<string[]> {
  const offers: string[] = [];
  let released = false;
  setHandler(offerUpdate, (offer) => {
    offers.push(offer);
    return offers.length;
  });
  setHandler(slowOfferUpdate, async (offer) => {
    offers.push(offer);
    await condition(() => released);
    return offers.length;
  });
  setHandler(offerSignal, (offer) => {
    offers.push(offer);
  });
  setHandler(releaseSignal, () => {
    released = true;
  });
  setHandler(offersQuery, () => offers);
  await condition(() => false, '1 hour');
  return offers;
}
