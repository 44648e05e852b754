/** A failure the `notify` command reports as one line on stderr, with this exit code. */
export class CliError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode = 1, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CliError';
    this.exitCode = exitCode;
  }
}

/** Where the command writes what a person reads. */
export interface CliIo {
  out(line: string): void;
  err(line: string): void;
}
