// Preloaded into a measured process (node --import): writes its peak RSS and CPU time on exit.
import { writeFileSync } from 'node:fs';

const out = process.env.BENCH_RSS_FILE;
if (out) {
  process.on('exit', () => {
    const u = process.resourceUsage();
    writeFileSync(
      out,
      JSON.stringify({ maxRss: u.maxRSS * 1024, cpuSeconds: (u.userCPUTime + u.systemCPUTime) / 1e6 }),
    );
  });
}
