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
  const lines = tap.split('\n');
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const point = /^(\s*)not ok \d+/.exec(lines[i]);
    if (!point) continue;
    out.push(lines[i].trimEnd());
    // The YAML block, if any: `---` on the next line, indented deeper, up to its `...`.
    if (/^\s*---\s*$/.test(lines[i + 1] ?? '') && lines[i + 1].indexOf('-') > point[1].length) {
      for (i += 1; i < lines.length; i++) {
        out.push(lines[i].trimEnd());
        if (/^\s*\.\.\.\s*$/.test(lines[i])) break;
      }
    }
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
