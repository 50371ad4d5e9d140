// The demo until the runner exists: start the embedded simulator, submit a few
// images through the typed client, long-poll them, download and verify each output.
import { createHash, randomUUID } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ApiClient } from '../dist/api/index.js';
import { startSimulator } from '../dist/simulator/index.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const outDir = join(root, 'out', 'demo');
const prompts = {
  'hero-mug': 'A ceramic mug on a walnut table, product photo',
  'mug-red': 'A red mug, studio backdrop',
  'mug-blue': 'A blue mug, kitchen table',
};

const sim = await startSimulator({ timeScale: 30 });
const client = new ApiClient({ baseUrl: sim.baseUrl, apiKey: sim.apiKey });
try {
  console.log(`simulator at ${sim.baseUrl} (time scale 30x)`);
  const before = await client.me();
  await mkdir(outDir, { recursive: true });
  const jobs = await Promise.all(
    Object.entries(prompts).map(async ([id, prompt]) => {
      const job = await client.submitImage({ prompt, model: 'studio-xl', aspectRatio: '4:5', resolution: '2K' }, randomUUID());
      console.log(`submitted ${id}: ${job.id}`);
      return [id, job];
    }),
  );
  for (const [id, submitted] of jobs) {
    let job = submitted;
    while (!['COMPLETED', 'FAILED', 'EXPIRED'].includes(job.status)) job = await client.getJob(job.id, 30);
    if (job.status !== 'COMPLETED') throw new Error(`${id} ended ${job.status}`);
    for (const [i, output] of job.outputs.entries()) {
      const dl = await client.download(output.downloadUrl);
      const chunks = [];
      for await (const chunk of dl.body) chunks.push(chunk);
      const bytes = Buffer.concat(chunks);
      if (dl.contentLength !== undefined && dl.contentLength !== bytes.length) throw new Error(`${id}: truncated download`);
      const file = join(outDir, `${id}-${i + 1}.png`);
      await writeFile(file, bytes);
      const sha = createHash('sha256').update(bytes).digest('hex');
      console.log(`${id}: ${relative(root, file)} ${bytes.length} bytes sha256 ${sha.slice(0, 16)}…`);
    }
  }
  const after = await client.me();
  console.log(`credits charged: ${before.credits - after.credits}; outputs in ${relative(root, outDir)}/`);
} finally {
  await client.close();
  await sim.close();
}
