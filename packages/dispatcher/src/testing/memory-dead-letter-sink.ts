import type { DeadLetter, DeadLetterSink } from '../middleware/dead-letter.js';

/** A dead-letter sink that keeps the letters in memory (the lab and unit tests). */
export interface MemoryDeadLetterSink extends DeadLetterSink {
  readonly letters: readonly DeadLetter[];
}

/** Creates an in-memory dead-letter sink. */
export function createMemoryDeadLetterSink(): MemoryDeadLetterSink {
  const letters: DeadLetter[] = [];
  return {
    letters,
    async send(letter) {
      letters.push(letter);
    },
  };
}
