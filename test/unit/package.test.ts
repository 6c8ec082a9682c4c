import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

/*
 * The package as npm packs it: what ships (and what must not), and whether a user can follow every
 * link of what ships. The README that ships is PACKAGE-README.md, put in README.md's place by
 * `prepack` (tools/scripts/pack-readme.mjs) and the contributors' one put back by `postpack`.
 */

const ROOT = path.resolve(__dirname, '..', '..');
const run = promisify(execFile);

interface Manifest {
  private?: boolean;
  files: string[];
  main: string;
  types: string;
  bin: Record<string, string>;
  exports: Record<string, string | Record<string, string>>;
  scripts: Record<string, string>;
}
const manifest = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as Manifest;

/** The files `npm pack` puts in the tarball, as its dry run lists them (scripts off: nothing is built or swapped). */
async function packed(): Promise<string[]> {
  const { stdout } = await run('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 });
  return (JSON.parse(stdout) as { files: { path: string }[] }[])[0]!.files.map((f) => f.path);
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
const slug = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');

/** The anchors of a markdown file's headings. */
const anchorsOf = (text: string) => new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => slug(m[1]!)));

/** Every relative link of a markdown text (`[x](target)`, `![x](target)`), as written. */
const linksOf = (text: string) =>
  [...text.replace(/```[\s\S]*?```/g, '').matchAll(/\]\(([^)\s]+)\)/g)].map((m) => m[1]!).filter((l) => !/^[a-z]+:/i.test(l) && !l.startsWith('#'));

test('the package is publishable: not private, and every entry point (main, types, exports, bin) lies in what files ships', () => {
  assert.equal(manifest.private, undefined, 'private: true stops npm publish');
  const targets = [manifest.main, manifest.types, ...Object.values(manifest.bin)];
  for (const entry of Object.values(manifest.exports)) targets.push(...(typeof entry === 'string' ? [entry] : Object.values(entry)));
  for (const target of targets) {
    const rel = target.replace(/^\.\//, '');
    assert.ok(rel === 'package.json' || manifest.files.some((f) => (f.endsWith('/') ? rel.startsWith(f) : rel === f)), `${target} is not covered by files`);
  }
  assert.match(manifest.scripts.prepack ?? '', /npm run build && node tools\/scripts\/pack-readme\.mjs swap/);
  assert.equal(manifest.scripts.postpack, 'node tools/scripts/pack-readme.mjs restore');
});

test('the tarball holds the user docs and no tests, fixtures, tooling, examples or secrets', async () => {
  const files = await packed();
  for (const doc of ['README.md', 'docs/EXTENDING.md', 'docs/OPERATIONS.md', 'docs/ARCHITECTURE.md', 'bin/wakegate.js', 'templates/project/_package.json'])
    assert.ok(files.includes(doc), `${doc} does not ship`);
  assert.deepEqual(
    files.filter(
      (f) => /^(test|examples|\.ci|\.wakegate|\.temporal|node_modules)\//.test(f) || (f.startsWith('tools/') && !/^tools\/bench\/results\/[^/]+\.svg$/.test(f)),
    ),
    [],
  );
  assert.deepEqual(
    files.filter((f) => /(^|\/)(\.env[^/]*|\.npmrc|id_rsa[^/]*|[^/]+\.(pem|key|p12|tgz)|password)$/i.test(f)),
    [],
  );
  assert.ok(!files.includes('docs/TESTS.md'), 'TESTS.md is about this repository');
});

test('every relative link of the shipped README and docs, and every docs/ path named in the shipped TSDoc, resolves inside the package', async () => {
  const files = await packed();
  const shipped = new Set(files);
  const isShipped = (rel: string) => shipped.has(rel) || files.some((f) => f.startsWith(rel.endsWith('/') ? rel : `${rel}/`));
  // In the tarball, README.md is PACKAGE-README.md (prepack); its links resolve from the package root.
  const docs: [string, string][] = [['README.md', readFileSync(path.join(ROOT, 'PACKAGE-README.md'), 'utf8')]];
  for (const f of files.filter((f) => f.endsWith('.md') && f !== 'README.md' && !f.startsWith('templates/')))
    docs.push([f, readFileSync(path.join(ROOT, f), 'utf8')]);
  const broken: string[] = [];
  for (const [file, text] of docs) {
    for (const link of linksOf(text)) {
      const [target, anchor] = link.split('#') as [string, string | undefined];
      const rel = path.posix.normalize(path.posix.join(path.posix.dirname(file), target));
      if (!isShipped(rel)) broken.push(`${file}: ${link} (no ${rel} in the package)`);
      else if (anchor && rel.endsWith('.md')) {
        const text2 = rel === 'README.md' ? docs[0]![1] : readFileSync(path.join(ROOT, rel), 'utf8');
        if (!anchorsOf(text2).has(anchor)) broken.push(`${file}: ${link} (no heading #${anchor} in ${rel})`);
      }
    }
  }
  for (const f of files.filter((f) => f.endsWith('.ts'))) {
    for (const m of readFileSync(path.join(ROOT, f), 'utf8').matchAll(/\bdocs\/[\w./-]*\w/g))
      if (!isShipped(m[0])) broken.push(`${f}: ${m[0]} (not in the package)`);
  }
  assert.deepEqual(broken, []);
});

test('prepack puts the package README in README.md and postpack puts the contributors’ back, healing a pack that died between them', async () => {
  const root = mkdtempSync(path.join(tmpdir(), 'wakegate-pack-'));
  writeFileSync(path.join(root, 'README.md'), 'for contributors');
  writeFileSync(path.join(root, 'PACKAGE-README.md'), 'for users');
  const script = (command: string) => run(process.execPath, [path.join(ROOT, 'tools', 'scripts', 'pack-readme.mjs'), command, root]);
  const readme = () => readFileSync(path.join(root, 'README.md'), 'utf8');
  await script('swap');
  assert.equal(readme(), 'for users');
  await script('swap'); // the pack before died: no postpack ran
  assert.equal(readme(), 'for users');
  await script('restore');
  assert.equal(readme(), 'for contributors');
  assert.ok(!existsSync(path.join(root, '.wakegate', 'pack', 'README.md')));
  await script('restore'); // nothing to restore: nothing changes
  assert.equal(readme(), 'for contributors');
});
