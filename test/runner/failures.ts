// What failed, for the end of a run's output. CI shows only the last few hundred lines of what a run
// printed; a file that failed early sits thousands of lines above them. The runner ends its output with
// each failed file's failing points, so the tail alone says what failed and where.

/** How many lines of one file's failures are shown; its saved TAP holds them all. */
const MAX_LINES = 60;

/**
 * The failing test points of one file's TAP, at every depth, each with its diagnostics (the indented YAML
 * block after it), at most `maxLines` lines.
 */
export function failingPoints(tap: string, maxLines = MAX_LINES): string[] {
  const out: string[] = [];
  // Whether the line is inside a failing point's YAML block; the indentation of the failing point on the
  // line before, if it was one.
  let inBlock = false;
  let after: string | undefined;
  for (const line of tap.split('\n')) {
    if (inBlock) {
      out.push(line.trimEnd());
      if (line.trim() === '...') inBlock = false;
      continue;
    }
    // The YAML block, if any: `---` on the line after the point, indented deeper than it.
    if (after !== undefined && line.trim() === '---' && line.indexOf('-') > after.length) {
      inBlock = true;
      out.push(line.trimEnd());
      continue;
    }
    after = /^(\s*)not ok \d+/.exec(line)?.[1];
    if (after !== undefined) out.push(line.trimEnd());
  }
  if (out.length > maxLines) {
    return [...out.slice(0, maxLines), `  ... ${out.length - maxLines} more lines in the saved TAP`];
  }
  return out;
}

/** The summary a run ends with: each failed file, and its failing points. */
export function failureSummary(failed: { file: string; tap: string; saved: string }[]): string {
  if (!failed.length) return '';
  const parts = failed.map(({ file, tap, saved }) => {
    const points = failingPoints(tap);
    return [
      `# ${file} (TAP saved in ${saved})`,
      ...(points.length ? points : ['  (no failing point: the process failed, timed out or was killed)']),
    ].join('\n');
  });
  return `\n== ${failed.length} test file(s) failed:\n${parts.join('\n')}\n`;
}
