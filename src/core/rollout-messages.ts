import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { RolloutInput, RolloutReply, RolloutStatus } from './rollout';

/*
 * The rollout workflow's messages (workflows/rollout/workflow.ts). Each update's validator refuses
 * what the machine would refuse, so a refused update writes no history; a held fleet, learnt only
 * after the validator, comes back as a reply with `accepted: false`.
 */

type Person<K extends RolloutInput['kind']> = Omit<Extract<RolloutInput, { kind: K }>, 'kind'>;
export type StartRequest = Person<'start'>;
export type RolloutStepRequest = Person<'step'>;
export type PromoteRequest = Person<'promote'>;
export type RollbackRequest = Person<'rollback'>;

/** A person starts a rollout: the candidate takes a share of wake keys under evidence checks. */
export const startRolloutUpdate = defineUpdate<RolloutReply, [StartRequest]>('startRollout');
/** A person widens or narrows the share. */
export const stepUpdate = defineUpdate<RolloutReply, [RolloutStepRequest]>('step');
/** A person gives the candidate every new wake (needs its minimum of candidate runs and every check passing). */
export const promoteUpdate = defineUpdate<RolloutReply, [PromoteRequest]>('promote');
/** A person gives every new wake the current version again, and may stop the candidate's runs in flight. */
export const rollbackUpdate = defineUpdate<RolloutReply, [RollbackRequest]>('rollback');

export const rolloutStatusQuery = defineQuery<RolloutStatus>('rolloutStatus');
