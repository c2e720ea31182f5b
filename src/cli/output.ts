/** Writing results: text or JSON on stdout, warnings and progress on stderr. */

/** Prints `doc` as one JSON document on stdout. */
export function printJson(doc: unknown): void {
  process.stdout.write(`${JSON.stringify(doc, null, 2)}\n`);
}

/** Prints `doc` as one line of JSON on stdout (one event of `watch`). */
export function printJsonLine(doc: unknown): void {
  process.stdout.write(`${JSON.stringify(doc)}\n`);
}

/** Prints lines of text on stdout. */
export function printLines(lines: readonly string[]): void {
  if (lines.length > 0) process.stdout.write(`${lines.join('\n')}\n`);
}

/** Prints `warning: …` lines on stderr. */
export function printWarnings(warnings: readonly string[]): void {
  for (const warning of warnings) process.stderr.write(`warning: ${warning}\n`);
}

/** A one-line progress indicator on stderr, redrawn at most every 100 ms; does nothing when disabled. */
export interface Progress {
  update(text: string): void;
  /** Erases the line. */
  done(): void;
}

/** A progress indicator that draws only when `enabled` (stdout and stderr are terminals and there is no --json). */
export function progress(enabled: boolean): Progress {
  let last = 0;
  let drawn = false;
  return {
    update(text) {
      const now = performance.now();
      if (!enabled || now - last < 100) return;
      last = now;
      drawn = true;
      process.stderr.write(`\r${text}\x1b[K`);
    },
    done() {
      if (drawn) process.stderr.write('\r\x1b[K');
      drawn = false;
    },
  };
}

/** Whether to show progress: stdout and stderr are terminals and the output is not JSON. */
export const showProgress = (json: boolean | undefined): boolean => !json && process.stdout.isTTY === true && process.stderr.isTTY === true;
