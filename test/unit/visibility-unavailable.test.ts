import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Client } from '@temporalio/client';
import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import { listAll } from '../../activities/supervisor/supervise';

/** A client whose `workflow.list` fails at once with `err` (what the gRPC call rejects with). */
const failingClient = (err: unknown) =>
  ({
    workflow: {
      list: () => ({
        [Symbol.asyncIterator]: () => ({ next: () => Promise.reject(err) }),
      }),
    },
  }) as unknown as Pick<Client, 'workflow'>;

test('a server with no visibility API fails the listing benign and non-retryable: the worker logs it at DEBUG, without a stack', async () => {
  const unimplemented = Object.assign(new Error('list failed'), { cause: { code: 12 } });
  await assert.rejects(listAll(failingClient(unimplemented), "WorkflowType = 'runWorkflow'", 10), (err: unknown) => {
    assert.ok(err instanceof ApplicationFailure);
    assert.equal(err.type, 'VisibilityUnavailable');
    assert.equal(err.nonRetryable, true);
    assert.equal(err.category, ApplicationFailureCategory.BENIGN);
    return true;
  });
});

test('any other visibility failure stays loud: rethrown as it came, retryable, not benign', async () => {
  const unavailable = Object.assign(new Error('connection refused'), { cause: { code: 14 } });
  await assert.rejects(listAll(failingClient(unavailable), "WorkflowType = 'runWorkflow'", 10), (err: unknown) => {
    assert.equal(err, unavailable);
    assert.ok(!(err instanceof ApplicationFailure));
    return true;
  });
});
