// Preloaded into a measured process (node --import): writes its peak RSS on exit.
import { writeFileSync } from 'node:fs';

const out = process.env.BENCH_RSS_FILE;
if (out) process.on('exit', () => writeFileSync(out, String(process.resourceUsage().maxRSS * 1024)));
