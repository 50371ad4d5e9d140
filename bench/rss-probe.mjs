// Preloaded into a measured process (node --import): writes its peak RSS and CPU time on exit.
import { readFileSync, writeFileSync } from 'node:fs';

/**
 * The process's own peak, in bytes: on Linux its memory's high-water mark (VmHWM). getrusage's peak is kept
 * across exec, so a process spawned by a large one reported its parent's size (a bench that had built a
 * 100,000-item state and its thumbnails gave the review server 115 MB, against 101 on its own).
 */
function peakRss() {
  try {
    const hwm = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
    if (hwm) return Number(hwm[1]) * 1024;
  } catch {}
  return process.resourceUsage().maxRSS * 1024;
}

const out = process.env.BENCH_RSS_FILE;
if (out) {
  process.on('exit', () => {
    const u = process.resourceUsage();
    writeFileSync(out, JSON.stringify({ maxRss: peakRss(), cpuSeconds: (u.userCPUTime + u.systemCPUTime) / 1e6 }));
  });
}
