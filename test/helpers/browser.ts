import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { onTestFinished } from 'vitest';

/** Debian's Chromium; GENBATCH_CHROMIUM points elsewhere. */
export const CHROMIUM = process.env.GENBATCH_CHROMIUM ?? '/usr/bin/chromium';

/**
 * Headless Chromium, closed when the test ends. A missing browser fails the
 * test with how to install it: a gallery nobody opened is not a tested gallery.
 */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`the gallery's browser test needs Chromium at ${CHROMIUM}, and it is not there. Install it with: apt-get install -y chromium (.ci/run does), or set GENBATCH_CHROMIUM to a Chromium binary.`);
  }
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    // As root there is no sandbox; and this machine's network is closed, so nothing may phone home.
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  onTestFinished(() => browser.close());
  return browser;
}
