/**
 * Offset bookkeeping for one topic-partition, so that the committed offset never passes a
 * message that is not finished: messages finish out of order (different keys run concurrently),
 * and the commit point is the lowest unfinished offset (or the next offset to read when all are
 * finished). Offsets are JS numbers: exact up to 2^53, far beyond any partition's lifetime.
 */
export class PartitionOffsets {
  /** Accepted offsets in ascending order; `#head` skips the finished prefix. */
  #accepted: number[] = [];
  #head = 0;
  #finished = new Set<number>();
  /** The next offset this partition is expected to deliver; lower ones are duplicates. */
  #next: number | undefined;
  #committed: number | undefined;
  /** Set when the partition is revoked: late completions must not commit into a new owner's range. */
  revoked = false;

  /** True when `offset` was already accepted (a re-fetch after a rebalance or seek): skip it. */
  isDuplicate(offset: number): boolean {
    return this.#next !== undefined && offset < this.#next;
  }

  /** Records that `offset` was taken on; offsets must be accepted in ascending order. */
  accept(offset: number): void {
    if (this.#next !== undefined && offset < this.#next) throw new RangeError(`offset ${offset} accepted twice`);
    this.#accepted.push(offset);
    this.#next = offset + 1;
  }

  /** Records that `offset` was not taken on and will be read again (a message not yet due): the next read starts there. */
  rewindTo(offset: number): void {
    if (this.#next === undefined || offset < this.#next) this.#next = offset;
  }

  /** Records that the message at `offset` is done (delivered, skipped or dead-lettered). */
  finish(offset: number): void {
    this.#finished.add(offset);
    while (this.#head < this.#accepted.length && this.#finished.delete(this.#accepted[this.#head] as number)) this.#head++;
    if (this.#head > 1024 && this.#head * 2 > this.#accepted.length) {
      this.#accepted = this.#accepted.slice(this.#head);
      this.#head = 0;
    }
  }

  /** Messages accepted and not finished. */
  get unfinished(): number {
    return this.#accepted.length - this.#head;
  }

  /** The offset to commit (the next one to read after a restart), or undefined when nothing new is safe to commit. */
  commitPoint(): number | undefined {
    const lowestUnfinished = this.#accepted[this.#head];
    const point = lowestUnfinished ?? this.#next;
    if (point === undefined || (this.#committed !== undefined && point <= this.#committed)) return undefined;
    return point;
  }

  /** Records a successful commit of `offset`. */
  committed(offset: number): void {
    if (this.#committed === undefined || offset > this.#committed) this.#committed = offset;
  }
}
