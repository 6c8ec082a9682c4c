import { cpSync, existsSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { installSpec } from './install-spec';
import { ExitCode, printJson, UsageError } from './output';

/** wakegate's own root: two folders up from src/cli/ (source) and from lib/cli/ (the compiled CLI). */
const ROOT = path.resolve(__dirname, '..', '..');
const TEMPLATE = path.join(ROOT, 'templates', 'project');
/** Template files whose real name npm or the tools of this checkout would act on: renamed when copied. */
const RENAMED: Record<string, string> = { _gitignore: '.gitignore', '_package.json': 'package.json', '_tsconfig.json': 'tsconfig.json' };

export interface InitOptions {
  /** The package name (default: the folder's name). */
  name?: string;
  /**
   * How the project depends on wakegate (a tarball: `file:/path/wakegate-0.1.0.tgz`). Default: how
   * this wakegate was installed (see `installSpec`): the same tarball or folder, else `^<this version>`.
   */
  wakegate?: string;
}

/** A name npm accepts for a package: lower case, no spaces, at most 214 characters. */
function packageName(name: string): string {
  if (!/^(@[a-z0-9-~][a-z0-9-._~]*\/)?[a-z0-9-~][a-z0-9-._~]*$/.test(name) || name.length > 214) {
    throw new UsageError(`"${name}" is not a valid npm package name (lower case letters, digits, - . _ ~): pass one with --name`);
  }
  return name;
}

/**
 * `wakegate init <dir>`: a project with one agent (a tool with arguments, an effect, an answer
 * schema), its trigger and webhook source, a schedule, the deployment module, a test on the
 * time-skipping server and one on the dev server, and a README with its two commands. Depends on
 * wakegate the way this one was installed (a tarball stays that tarball). Refuses a folder that
 * exists and is not empty; installs nothing (the next steps say what to run).
 */
export function init(dir: string, opts: InitOptions): number {
  const target = path.resolve(dir);
  if (existsSync(target) && readdirSync(target).length > 0) throw new UsageError(`${target} is not empty: name a new folder`);
  if (!existsSync(TEMPLATE)) throw new Error(`the project template is missing from this install of wakegate (${TEMPLATE})`);
  const name = packageName(opts.name ?? path.basename(target).toLowerCase());
  const own = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
  const found = opts.wakegate === undefined ? installSpec(ROOT, own.version, target) : undefined;
  const spec = opts.wakegate ?? found!.spec;
  cpSync(TEMPLATE, target, { recursive: true });
  for (const [from, to] of Object.entries(RENAMED)) {
    if (existsSync(path.join(target, from))) renameSync(path.join(target, from), path.join(target, to));
  }
  const pkgFile = path.join(target, 'package.json');
  const pkg = JSON.parse(readFileSync(pkgFile, 'utf8')) as { name: string; dependencies: Record<string, string> };
  pkg.name = name;
  pkg.dependencies.wakegate = spec;
  writeFileSync(pkgFile, JSON.stringify(pkg, null, 2) + '\n');
  const readme = path.join(target, 'README.md');
  writeFileSync(readme, readFileSync(readme, 'utf8').replaceAll('wakegate-project', name));
  const files = readdirSync(target, { recursive: true, encoding: 'utf8' })
    .filter((f) => statSync(path.join(target, f)).isFile())
    .sort();
  const cd = path.relative(process.cwd(), target) || '.';
  const from = found ? { wakegateFrom: found.from, ...(found.warning ? { warning: found.warning } : {}) } : { wakegateFrom: 'flag' };
  printJson({ created: target, name, wakegate: spec, ...from, files, next: [`cd ${cd}`, 'npm install', 'npm test', 'npm start'] });
  process.stderr.write(`wakegate: created ${name} in ${cd}, depending on wakegate ${spec}${found ? ` (${found.from})` : ''}.\n`);
  if (found?.warning) process.stderr.write(`wakegate: ${found.warning}\n`);
  process.stderr.write(`wakegate: next: cd ${cd} && npm install && npm test, then npm start.\n`);
  return ExitCode.ok;
}
