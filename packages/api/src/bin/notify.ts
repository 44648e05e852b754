// The `notify` command (`pnpm notify …` at the repository root runs this with tsx).
// The only place that reads process.env and process.argv; everything else takes them as arguments.
import { runNotify } from '../cli/main.js';

const code = await runNotify(process.argv.slice(2), process.env, {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
});
// Open handles (a pool that is still draining, kafkajs timers) must not keep a finished command alive.
process.exit(code);
