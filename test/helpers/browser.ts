import { existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { ROOT } from './cli.js';

/**
 * A real Chromium for the status page's tests: Debian's `chromium` package (browsers cannot be
 * downloaded here; `.ci/run` installs the package), driven by playwright-core. The flags are those
 * that keep a headless Chromium from reaching out to the network at start.
 */
export const CHROMIUM = process.env.EDGEPLANE_CHROMIUM ?? '/usr/bin/chromium';
export const HAS_CHROMIUM = existsSync(CHROMIUM);
const REQUIRE_BROWSER = process.env.EDGEPLANE_REQUIRE_BROWSER === '1';
if (REQUIRE_BROWSER && !HAS_CHROMIUM) throw new Error(`EDGEPLANE_REQUIRE_BROWSER is set but ${CHROMIUM} does not exist: the browser tests would be skipped`);

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  });
}

/** Where a failing test's screenshot goes (printed in the failure). */
export const SCREENSHOTS = process.env.EDGEPLANE_SCREENSHOTS ?? join(tmpdir(), 'edgeplane-ui-screenshots');

/** Runs a step of a browser test; on failure saves a screenshot of the page and names it in the error. */
export async function step<T>(page: Page, name: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    mkdirSync(SCREENSHOTS, { recursive: true });
    const file = join(mkdtempSync(join(SCREENSHOTS, 'fail-')), `${name.replace(/[^a-z0-9]+/gi, '-')}.png`);
    await page.screenshot({ path: file, fullPage: true }).catch(() => undefined);
    (err as Error).message += `\n(screenshot of the page: ${file})`;
    throw err;
  }
}

const AXE = readFileSync(createRequire(join(ROOT, 'package.json')).resolve('axe-core/axe.min.js'), 'utf8');

export interface AxeViolation { id: string; impact: string | null; help: string; nodes: { target: unknown[] }[] }

/** axe-core's serious and critical violations of the page as it is now (WCAG 2.1 A and AA rules). */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  // Added as a script element's text would be refused by the page's CSP; evaluate runs it in the page's world.
  await page.evaluate(AXE);
  const result = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run: (ctx: unknown, opts: unknown) => Promise<{ violations: AxeViolation[] }> } }).axe;
    return axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] } });
  });
  return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}
