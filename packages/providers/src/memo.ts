/**
 * `compute` remembered by its string argument, for values derived from the string alone (an
 * endpoint id, a URL's origin, a checked URL): a delivery path asks for the same few again and
 * again. At most `max` entries; when full the memory starts over (the values are computed again,
 * never wrong). A throw is not remembered: the next call computes again. `undefined` is not a
 * value it can remember (use `null`).
 */
export function memoizeByString<T>(compute: (key: string) => T, max = 10_000): (key: string) => T {
  const memory = new Map<string, T>();
  return (key) => {
    let value = memory.get(key);
    if (value === undefined) {
      value = compute(key);
      if (memory.size >= max) memory.clear();
      memory.set(key, value);
    }
    return value;
  };
}
