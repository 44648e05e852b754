// `tsx bench/profile-summary.ts <file.cpuprofile> [top]`: where a process's CPU time went
// (self and inclusive time by function, self time by package). Used for BENCHMARKS.md.
import path from 'node:path';
import { renderProfile, summariseProfile } from './lib/cpu-profile.js';

const [file, top] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: tsx bench/profile-summary.ts <file.cpuprofile> [top]\n');
  process.exit(2);
}
process.stdout.write(`${renderProfile(path.basename(file), summariseProfile(file, top ? Number(top) : 15))}\n`);
