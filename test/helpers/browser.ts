import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

/** Debian's chromium (tools/scripts/ensure-setup.sh --browser installs it); never a downloaded browser. */
const CHROMIUM = '/usr/bin/chromium';

/** A missing browser fails the test, loudly, with the command that installs it: never a skip. */
export function chromiumPath(): string {
  try {
    accessSync(CHROMIUM, constants.X_OK);
    return CHROMIUM;
  } catch {
    throw new Error(
      `${CHROMIUM} is missing: install Debian's chromium with 'apt-get install chromium' (npm test does it through tools/scripts/ensure-setup.sh --browser)`,
    );
  }
}

export async function launch(): Promise<{ context: BrowserContext; close: () => Promise<void> }> {
  const profile = mkdtempSync(path.join(tmpdir(), 'wakegate-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath(),
    headless: true,
    viewport: { width: 1400, height: 1000 },
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Run `step` on the page; on failure, keep a screenshot in the temp dir and name it in the error. */
export async function step<T>(page: Page, what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    const shot = path.join(mkdtempSync(path.join(tmpdir(), 'wakegate-browser-')), 'failure.png');
    await page.screenshot({ path: shot, fullPage: true }).catch(() => undefined);
    throw new Error(`browser: ${what} failed (screenshot: ${shot}): ${(err as Error).message}`);
  }
}
