/**
 * `--name value` options of a probe's command line: `take(name, fallback)` answers the value and
 * removes both words from `args`, so what is left are the probe's other arguments.
 */
export function optionTaker(args: string[]): (name: string, fallback: string) => string {
  return (name, fallback) => {
    const at = args.indexOf(name);
    if (at < 0) return fallback;
    const value = args[at + 1];
    if (value === undefined) throw new Error(`${name} needs a value`);
    args.splice(at, 2);
    return value;
  };
}

/** The `NAME=value` words of `args` as an environment (a probe's settings for the service). */
export function envAssignments(args: readonly string[]): Record<string, string> {
  return Object.fromEntries(args.filter((a) => a.includes('=')).map((a) => [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)]));
}
