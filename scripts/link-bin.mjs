// npm links the bins of dependencies, never the project's own, so `npx genbatch`
// inside a clone would look for it in the registry. Link it after each build.
import { chmod, mkdir, rm, symlink } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const target = join(root, 'dist', 'bin', 'genbatch.js');
const binDir = join(root, 'node_modules', '.bin');
const link = join(binDir, 'genbatch');

await chmod(target, 0o755);
await mkdir(binDir, { recursive: true });
await rm(link, { force: true });
await symlink(relative(binDir, target), link);
