import fs from 'node:fs';

/** Peak resident memory seen while a `PeakRss` sampler ran, in bytes (0: nothing sampled). */
export interface PeakRssReport {
  /** The largest peak of any one `notify start` child of this test process. */
  readonly notify: number;
  /** The largest peak of any one of the extra processes (e.g. the cluster's brokers). */
  readonly extra: number;
}

/** `VmHWM` (the kernel's own peak RSS of the process) in bytes, or null when it is gone. */
function peakOf(pid: number): number | null {
  try {
    const m = /^VmHWM:\s+(\d+) kB$/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/** The `notify start` children of this process (what the chaos stack spawns), by /proc. */
function notifyChildren(): number[] {
  const pids: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid !== process.pid) continue;
      const cmd = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (cmd.includes('notify.js') && cmd.includes('start')) pids.push(Number(entry));
    } catch {
      /* gone meanwhile */
    }
  }
  return pids;
}

/**
 * Samples, every `everyMs`, the peak RSS (VmHWM) of every `notify start` child of this process
 * and of the pids `extraPids()` names. VmHWM is the process's own high-water mark, so a sample
 * misses at most what a process reached in its last `everyMs` before it was killed. Linux only.
 */
export function samplePeakRss(extraPids: () => readonly number[] = () => [], everyMs = 1_000): { stop(): PeakRssReport } {
  const peaks = { notify: 0, extra: 0 };
  const sample = () => {
    for (const pid of notifyChildren()) peaks.notify = Math.max(peaks.notify, peakOf(pid) ?? 0);
    for (const pid of extraPids()) peaks.extra = Math.max(peaks.extra, peakOf(pid) ?? 0);
  };
  const timer = setInterval(sample, everyMs);
  sample();
  return {
    stop() {
      sample();
      clearInterval(timer);
      return { ...peaks };
    },
  };
}

/** `123 MB` */
export const mb = (bytes: number) => `${Math.round(bytes / 1e6)} MB`;
