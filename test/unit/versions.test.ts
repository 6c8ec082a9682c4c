import { test } from 'node:test';
import assert from 'node:assert/strict';
import { installedTemporalVersions, temporalVersionProblem } from '../../src/runtime/versions';

test("this checkout's Temporal packages are one version, read from their package.json", () => {
  const versions = installedTemporalVersions();
  assert.equal(Object.keys(versions).length, 5);
  assert.equal(new Set(Object.values(versions)).size, 1, JSON.stringify(versions));
  assert.match(Object.values(versions)[0]!, /^1\.\d+\.\d+/);
  assert.equal(temporalVersionProblem(versions), undefined);
});

test('two versions of the Temporal packages are refused, naming each and the install that makes them one', () => {
  const problem = temporalVersionProblem({ '@temporalio/client': '1.24.0', '@temporalio/worker': '1.25.1', '@temporalio/workflow': '1.24.0' });
  assert.match(problem!, /more than one version/);
  assert.match(problem!, /@temporalio\/worker@1\.25\.1/);
  assert.match(problem!, /npm install @temporalio\/client@1\.25\.1 @temporalio\/worker@1\.25\.1 @temporalio\/workflow@1\.25\.1/);
});

test('a missing Temporal package is named as the peer dependency to install', () => {
  const problem = temporalVersionProblem({ '@temporalio/client': '1.24.0', '@temporalio/worker': undefined });
  assert.match(problem!, /needs @temporalio\/worker \(a peer dependency\): npm install @temporalio\/worker/);
});
