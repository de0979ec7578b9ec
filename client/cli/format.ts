import type { Sandbox } from '../types.ts';

/**
 * Human output. Variable values and the twins' admin token are left out: they are secrets that would
 * otherwise sit in scrollback and screen shares; `--json` prints everything for scripts.
 */
export function formatSandbox(sandbox: Sandbox): string {
  const rows: [string, string][] = [
    ['Sandbox', sandbox.sandbox_id],
    ['Status', sandbox.status],
    ['App', sandbox.app_url ?? '(not deployed yet)'],
    ['Source', `${sandbox.repo} ${target(sandbox)}`],
    ['Expires', `${sandbox.expires_at} (TTL ${sandbox.ttl_minutes} min)`],
  ];
  if (sandbox.error) rows.push(['Error', sandbox.error]);
  const variables = Object.keys(sandbox.env_vars).sort();
  if (variables.length) rows.push(['Variables', variables.join(', ')]);
  const lines = table(rows.map(([label, value]) => [`${label}:`, value]));
  const twins = Object.entries(sandbox.twins);
  if (twins.length) {
    lines.push('Twins:');
    lines.push(...table(twins.map(([name, twin]) => [`  ${name}`, twin.base_url])));
  }
  return lines.join('\n');
}

export function formatSandboxList(sandboxes: Sandbox[]): string {
  if (!sandboxes.length) return 'No sandboxes.';
  return table([
    ['ID', 'STATUS', 'REPO', 'TARGET', 'CREATED'],
    ...sandboxes.map((s) => [s.sandbox_id, s.status, s.repo, target(s), s.created_at]),
  ]).join('\n');
}

function target(sandbox: Sandbox): string {
  return sandbox.pr_url ?? (sandbox.branch ? `branch ${sandbox.branch}` : '');
}

/** Left-aligned columns, two spaces apart, no trailing spaces. */
export function table(rows: string[][]): string[] {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  return rows.map((row) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd(),
  );
}
