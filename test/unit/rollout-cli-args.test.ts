import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseCheck, parseStart, parseStep, personOf } from '../../src/cli/rollout-args';
import { UsageError } from '../../src/cli/output';

/* `wakegate rollout` arguments (src/cli/rollout-args.ts): checked at the edge, with the flag named in each error. */

const person = { who: 'ann', reason: 'ship v2' };
const usage = (fn: () => unknown, pattern: RegExp) => assert.throws(fn, (err: unknown) => err instanceof UsageError && pattern.test(err.message));

test('a check in its simple form: metric, then key=value parts; name defaults to the metric, min to --min-runs', () => {
  assert.deepEqual(parseCheck('non_success:margin=0.2:min=5:onFail=finish', 3), {
    name: 'non_success',
    metric: 'non_success',
    margin: 0.2,
    minRuns: 5,
    onFail: 'finish',
  });
  assert.deepEqual(parseCheck('usd_per_run:name=spend:factor=2:bound=0.5:onFail=stop', 3), {
    name: 'spend',
    metric: 'usd_per_run',
    factor: 2,
    bound: 0.5,
    minRuns: 3,
    onFail: 'stop',
  });
  assert.deepEqual(parseCheck('shadow_diff:bound=0.1', 2), { name: 'shadow_diff', metric: 'shadow_diff', bound: 0.1, minRuns: 2, onFail: 'finish' });
});

test('a bad check names what is wrong', () => {
  usage(() => parseCheck('latency:bound=1', 1), /metric is one of non_success, failures/);
  usage(() => parseCheck('non_success:margin', 1), /"margin" is not key=value/);
  usage(() => parseCheck('non_success:margin=abc', 1), /margin is a number/);
  usage(() => parseCheck('non_success:margin=-1', 1), /margin is 0 or more/);
  usage(() => parseCheck('non_success:min=0', 1), /min is at least 1/);
  usage(() => parseCheck('non_success:min=2.5', 1), /min is a whole number/);
  usage(() => parseCheck('non_success:onFail=retry', 1), /onFail is finish or stop/);
  usage(() => parseCheck('non_success:colour=red', 1), /unknown key colour/);
  usage(() => parseCheck('non_success:margin=0.1:margin=0.2', 1), /margin is given twice/);
});

test('start: candidate, share over 0 to 1, min runs, at least one check, a person', () => {
  assert.deepEqual(parseStart({ candidate: 'v2', share: '0.2', minRuns: '10', check: ['non_success:margin=0.2'], ...person }), {
    candidate: 'v2',
    share: 0.2,
    minRuns: 10,
    checks: [{ name: 'non_success', metric: 'non_success', margin: 0.2, minRuns: 10, onFail: 'finish' }],
    ...person,
  });
  const base = { candidate: 'v2', share: '0.2', check: ['non_success:margin=0.2'], ...person };
  usage(() => parseStart({ ...base, candidate: ' ' }), /--candidate must name/);
  usage(() => parseStart({ ...base, share: '20' }), /--share is a fraction/);
  usage(() => parseStart({ ...base, share: '0' }), /--share is a fraction of wake keys over 0/);
  usage(() => parseStart({ ...base, share: 'half' }), /--share is a fraction/);
  usage(() => parseStart({ ...base, minRuns: '0' }), /--min-runs/);
  usage(() => parseStart({ ...base, check: [] }), /at least one evidence check/);
  usage(() => parseStart({ ...base, who: '' }), /--who/);
  usage(() => parseStart({ ...base, reason: '  ' }), /--reason/);
});

test('step takes a share from 0 to 1; promote and rollback a person', () => {
  assert.deepEqual(parseStep({ share: '0.5', ...person }), { share: 0.5, ...person });
  assert.deepEqual(parseStep({ share: '0', ...person }), { share: 0, ...person });
  usage(() => parseStep({ share: '1.5', ...person }), /--share/);
  assert.deepEqual(personOf({ who: ' ann ', reason: ' why ' }), { who: 'ann', reason: 'why' });
  usage(() => personOf({ reason: 'why' }), /--who/);
});
