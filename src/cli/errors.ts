/**
 * Exit codes of the `relock` command and the error that carries one. Every failure reaches the user as
 * one line on stderr (`relock: <message>`) and one of these codes.
 */

/** Exit codes: 0 done; 1 failed (Redis unreachable, a Redis error, a declined confirmation); 2 bad usage; 3 no such relock object. */
export const EXIT = Object.freeze({ ok: 0, failed: 1, usage: 2, notFound: 3 });

/** A failure to report as one line on stderr, with the exit code to end with. */
export class CliError extends Error {
  constructor(
    message: string,
    /** The process exit code (see `EXIT`). */
    readonly exitCode: number = EXIT.failed,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/** A usage error (exit code 2): a bad argument or option, or an operation the object does not support. */
export const usageError = (message: string): CliError => new CliError(message, EXIT.usage);
