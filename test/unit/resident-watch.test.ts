import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { changed, deploymentFiles } from '../../src/cli/resident';
import { temporalProfileFiles } from '../../src/config/resident';

/* What retires a resident process (src/cli/resident.ts): the files it watches, and when they count as changed. */
const dir = mkdtempSync(path.join(os.tmpdir(), 'wakegate-resident-watch-'));
const past = (file: string) => utimesSync(file, new Date(Date.now() - 60_000), new Date(Date.now() - 60_000));

test('a Temporal profile that appears or changes retires it; one that stays as it was does not', () => {
  const profile = path.join(dir, 'temporal.toml');
  const absent = deploymentFiles(Date.now(), [profile]);
  assert.equal(changed(absent), false, 'absent, and still absent');
  writeFileSync(profile, 'address = "prod.example:7233"\n');
  assert.equal(changed(absent), true, 'a profile that appeared');
  past(profile);
  const present = deploymentFiles(Date.now(), [profile]);
  assert.equal(changed(present), false);
  writeFileSync(profile, 'address = "other:7233"\n');
  assert.equal(changed(present), true, 'a profile edited');
});

test('a file written while the process was loading counts as changed at once', () => {
  const file = path.join(dir, 'deployment.toml');
  const startedAtMs = Date.now() - 1000;
  writeFileSync(file, 'v2');
  assert.equal(changed(deploymentFiles(startedAtMs, [file])), true);
});

test('the profile files looked at: TEMPORAL_CONFIG_FILE and the default temporal.toml', () => {
  assert.deepEqual(temporalProfileFiles({ TEMPORAL_CONFIG_FILE: '/etc/t.toml' }, '/home/a'), ['/etc/t.toml', '/home/a/.config/temporalio/temporal.toml']);
  assert.deepEqual(temporalProfileFiles({ XDG_CONFIG_HOME: '/x' }, '/home/a'), ['/x/temporalio/temporal.toml']);
});
