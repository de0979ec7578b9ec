/** Reads TAP as tap saves it per test file: tests that asserted nothing, and skips. */

export interface Finding {
  file: string;
  test: string;
  why: string;
}

/** Empty passing tests (`1..0` with no directive, then `ok`), and with `skipsFail` every skip. */
export function findings(file: string, tap: string, skipsFail: boolean): Finding[] {
  const lines = tap.split('\n');
  const found: Finding[] = [];
  lines.forEach((line, i) => {
    const plan = /^(\s*)1\.\.0\s*(#.*)?$/.exec(line);
    if (plan) {
      const indent = plan[1]!.length;
      // The test's own result line: the next line at the parent's indentation.
      const result = lines
        .slice(i + 1)
        .find((next) => next.trim() && next.length - next.trimStart().length === indent - 4);
      const name =
        /^\s*(?:not )?ok \d+ - (.*?)(?: # time=.*)?$/.exec(result ?? '')?.[1] ?? '(the whole file)';
      if (!plan[2]) found.push({ file, test: name, why: 'passed without a single assertion' });
      else if (skipsFail)
        found.push({ file, test: name, why: `skipped under CI (${plan[2].slice(1).trim()})` });
    } else if (skipsFail && /^\s*ok \d+ - .*# SKIP/.test(line)) {
      found.push({ file, test: line.trim(), why: 'skipped under CI' });
    }
  });
  return found;
}
