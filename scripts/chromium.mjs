// The headless Chromium for the gallery's browser tests and benchmark. It comes
// with `npm install`: @sparticuz/chromium ships it brotli-packed inside the
// package, and this unpacks it once per version into node_modules/.cache.
// GENBATCH_CHROMIUM names another binary instead.
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import Sparticuz from '@sparticuz/chromium';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** As root there is no sandbox; and this machine's network is closed, so nothing may phone home. */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

let installing;

/** @returns {Promise<{ executablePath: string, env: Record<string, string> }>} */
export function installedChromium() {
  installing ??= locate();
  return installing;
}

/** Options for playwright-core's chromium.launch(). */
export async function chromiumLaunchOptions() {
  const { executablePath, env } = await installedChromium();
  return { executablePath, env: { ...process.env, ...env }, args: CHROMIUM_ARGS };
}

async function locate() {
  const chosen = process.env.GENBATCH_CHROMIUM;
  if (chosen) {
    if (!existsSync(chosen))
      throw new Error(
        `GENBATCH_CHROMIUM names ${chosen}, and there is no file there. Unset it to use the Chromium that npm install brought (@sparticuz/chromium).`,
      );
    return { executablePath: chosen, env: {} };
  }
  const { version } = JSON.parse(
    readFileSync(join(ROOT, 'node_modules', '@sparticuz', 'chromium', 'package.json'), 'utf8'),
  );
  const dir = join(ROOT, 'node_modules', '.cache', `genbatch-chromium-${version}`);
  if (!existsSync(join(dir, 'chromium'))) await unpackInto(dir);
  // The package's own fonts.conf names Lambda's paths; this one names the unpacked fonts and the system's.
  const fontsConf = join(dir, 'fonts.genbatch.conf');
  if (!existsSync(fontsConf)) {
    const conf = `<?xml version="1.0"?>\n<fontconfig>\n  <dir>${join(dir, 'fonts', 'fonts')}</dir>\n  <dir>/usr/share/fonts</dir>\n  <cachedir>${join(dir, 'fonts-cache')}</cachedir>\n</fontconfig>\n`;
    writeFileSync(`${fontsConf}.${process.pid}`, conf);
    renameSync(`${fontsConf}.${process.pid}`, fontsConf);
  }
  return { executablePath: join(dir, 'chromium'), env: { FONTCONFIG_FILE: fontsConf } };
}

/**
 * The package unpacks into os.tmpdir() and takes any file already there as
 * finished, so two test processes could start a half-written binary. Each
 * process unpacks into a staging dir of its own instead (TMPDIR pointed at it
 * for the call), then renames it into place: the first rename wins, and the
 * others use that copy.
 */
async function unpackInto(dir) {
  const staging = `${dir}.staging-${process.pid}-${Date.now()}`;
  mkdirSync(staging, { recursive: true });
  const tmpdirBefore = process.env.TMPDIR;
  process.env.TMPDIR = staging;
  try {
    const unpacked = await Sparticuz.executablePath();
    if (unpacked !== join(staging, 'chromium'))
      throw new Error(`@sparticuz/chromium unpacked to ${unpacked}, not into ${staging}`);
  } finally {
    if (tmpdirBefore === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = tmpdirBefore;
  }
  try {
    renameSync(staging, dir);
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    if (!existsSync(join(dir, 'chromium'))) throw error;
  }
}
