// Preloaded into a benchmarked service (`node --import bench/dist/lib/alloc-sampler.js`) by
// bench/alloc-probe.ts: V8's sampling heap profiler, keeping the samples of objects that minor and
// major collections freed too, so the profile holds every sampled allocation, not only what is
// still alive. On each SIGUSR2 it writes the profile so far to `$BENCH_ALLOC_OUT/<n>.json`
// (n = 1, 2, …; written whole under a temporary name, then renamed). Diagnostics only.
import { renameSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';

const out = process.env.BENCH_ALLOC_OUT;
if (!out) throw new Error('alloc-sampler: BENCH_ALLOC_OUT (a directory) is not set');

const session = new Session();
session.connect();
session.post('HeapProfiler.enable');
session.post('HeapProfiler.startSampling', {
  // One sample per 4 KiB allocated on average (V8's default is 32 KiB): enough per window.
  samplingInterval: 4_096,
  includeObjectsCollectedByMajorGC: true,
  includeObjectsCollectedByMinorGC: true,
});

let written = 0;
process.on('SIGUSR2', () => {
  const n = ++written;
  session.post('HeapProfiler.getSamplingProfile', (err, result) => {
    if (err) {
      process.stderr.write(`alloc-sampler: ${err.message}\n`);
      return;
    }
    writeFileSync(`${out}/${n}.json.tmp`, JSON.stringify(result.profile));
    renameSync(`${out}/${n}.json.tmp`, `${out}/${n}.json`);
  });
});
