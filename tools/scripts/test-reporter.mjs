import path from 'node:path';

/**
 * A node:test reporter for tools/scripts/run-tests.ts: one JSON line per test file as it ends,
 * `{"file", "ms", "passed"}`, from the file-level test the runner makes for each file it runs in a
 * process of its own (`test:complete` on Node 20, `test:pass`/`test:fail` later; its name is the
 * file's path). Its duration is the file's wall time: the process, its servers and every test in it.
 * Plain JavaScript: node loads reporters without the tsx hooks.
 *
 * @param {AsyncIterable<{ type: string, data?: { name?: string, file?: string, nesting?: number, details?: { duration_ms?: number, passed?: boolean } } }>} source
 * @returns {AsyncGenerator<string>}
 */
export default async function* fileDurations(source) {
  const seen = new Set();
  for await (const { type, data } of source) {
    if (!['test:complete', 'test:pass', 'test:fail'].includes(type) || !data?.file || !data.name || data.nesting !== 0) continue;
    if (path.resolve(data.name) !== path.resolve(data.file) || seen.has(data.file)) continue;
    const ms = data.details?.duration_ms;
    if (typeof ms !== 'number') continue;
    seen.add(data.file);
    const passed = type === 'test:complete' ? data.details?.passed !== false : type === 'test:pass';
    yield `${JSON.stringify({ file: data.file, ms: Math.round(ms), passed })}\n`;
  }
}
