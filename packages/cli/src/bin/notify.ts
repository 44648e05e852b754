// The `notify` command: `node packages/cli/dist/bin/notify.js …` (what `pnpm notify …` runs), or the `notify` bin of @notify/cli.
// The only place that reads process.env and process.argv; everything else takes them as arguments.
import type { ProcessHooks } from '../main.js';

// `start` stops gracefully on SIGTERM / SIGINT, but loading the command's modules takes about half a
// second before it can say so: a signal meanwhile is held here and handed to its handler, instead of
// killing the process (exit 143). Other commands keep Node's default (a signal ends them at once).
const held = new Set<NodeJS.Signals>();
const hold = (signal: NodeJS.Signals) => void held.add(signal);
if (process.argv[2] === 'start') {
  process.on('SIGTERM', hold);
  process.on('SIGINT', hold);
}
const proc: ProcessHooks = {
  onSignal(signal, handler) {
    process.off(signal, hold);
    process.on(signal, handler);
    if (held.has(signal)) handler();
  },
  exit: (code) => process.exit(code),
};

const { runNotify } = await import('../main.js');
const code = await runNotify(
  process.argv.slice(2),
  process.env,
  {
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
  },
  proc,
);
// Open handles (a pool that is still draining, kafkajs timers) must not keep a finished command alive.
process.exit(code);
