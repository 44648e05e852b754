// The `notify` command: `node packages/cli/dist/bin/notify.js …` (what `pnpm notify …` runs), or the `notify` bin of @notify/cli.
// The only place that reads process.env and process.argv; everything else takes them as arguments.
import { runNotify } from '../main.js';

const code = await runNotify(process.argv.slice(2), process.env, {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
});
// Open handles (a pool that is still draining, kafkajs timers) must not keep a finished command alive.
process.exit(code);
