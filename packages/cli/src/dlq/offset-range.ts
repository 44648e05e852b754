import { CliError } from '../cli-error.js';

/** One `--topic-offset-range` of `notify dlq redrive`: a partition of `<prefix>.dlq` and offsets in it, both ends included. */
export interface OffsetRange {
  readonly partition: number;
  readonly from: bigint;
  /** Undefined: up to the partition's last message at the time of the run. */
  readonly to: bigint | undefined;
}

const RANGE = /^(\d{1,6}):(\d{1,19})(?:(-)(\d{1,19})?)?$/;

/**
 * Parses `P:FROM-TO` (both ends included), `P:FROM-` (to the end) or `P:OFFSET` (one message).
 * Throws a usage `CliError` (exit 2) naming the value otherwise.
 */
/** @internal Exported for its tests. */
export function parseOffsetRange(text: string): OffsetRange {
  const m = RANGE.exec(text.trim());
  if (!m) {
    throw new CliError(
      `dlq redrive: --topic-offset-range "${text}": expected PARTITION:FROM-TO, PARTITION:FROM- (to the end) or PARTITION:OFFSET, e.g. 0:120-180`,
      2,
    );
  }
  const partition = Number(m[1]);
  const from = BigInt(m[2]!);
  const to = m[3] === undefined ? from : m[4] === undefined ? undefined : BigInt(m[4]);
  if (to !== undefined && to < from) throw new CliError(`dlq redrive: --topic-offset-range "${text}": the range ends before it starts`, 2);
  return { partition, from, to };
}

/** Parses every `--topic-offset-range`; at least one, at most one per partition. */
export function parseOffsetRanges(texts: readonly string[] | undefined): OffsetRange[] {
  if (!texts || texts.length === 0) {
    throw new CliError('dlq redrive: give at least one --topic-offset-range PARTITION:FROM-TO (docs/operations.md: dead letters)', 2);
  }
  const ranges = texts.map(parseOffsetRange);
  const seen = new Set<number>();
  for (const r of ranges) {
    if (seen.has(r.partition)) throw new CliError(`dlq redrive: partition ${r.partition} is given twice; give one range per partition`, 2);
    seen.add(r.partition);
  }
  return ranges.sort((a, b) => a.partition - b.partition);
}
