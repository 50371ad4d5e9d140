import { chromium, type Browser } from 'playwright-core';
import { onTestFinished } from 'vitest';
import { chromiumLaunchOptions } from '../../scripts/chromium.mjs';

/** Headless Chromium (the one npm install brought, or GENBATCH_CHROMIUM), closed when the test ends. */
export async function launchChromium(): Promise<Browser> {
  const browser = await chromium.launch(await chromiumLaunchOptions());
  onTestFinished(() => browser.close());
  return browser;
}
