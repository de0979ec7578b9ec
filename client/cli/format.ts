import type { Sandbox } from '../types.ts';

/**
 * Human output. Variable values and the twins' admin token are left out: they are secrets that would
 * otherwise sit in scrollback and screen shares; `--json` prints everything for scripts.
 */
export function formatSandbox(sandbox: Sandbox): string {
  const rows: [string, string][] = [
    ['Sandbox', sandbox.sandbox_id],
    ['Status', sandbox.status],
  ];
  if (sandbox.error) rows.push(['Error', sandbox.error]);
  rows.push(
    ['App', appLine(sandbox)],
    ['Source', `${sandbox.repo} ${target(sandbox)}`],
    lifetimeRow(sandbox),
  );
  if (sandbox.status === 'failed') rows.push(['Logs', `twinbox logs ${sandbox.sandbox_id}`]);
  const variables = Object.keys(sandbox.env_vars).sort();
  if (variables.length) rows.push(['Variables', variables.join(', ')]);
  const lines = table(rows.map(([label, value]) => [`${label}:`, value]));
  const twins = Object.entries(sandbox.twins);
  if (twins.length) {
    const live = ['queued', 'building', 'ready'].includes(sandbox.status);
    lines.push(live ? 'Twins:' : 'Twins (stopped):');
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

/** Where the app is, or why there is none: an ended sandbox's URL no longer serves it. */
function appLine(sandbox: Sandbox): string {
  switch (sandbox.status) {
    case 'ready':
      return sandbox.app_url ?? '(no URL given)';
    case 'failed':
      return '(none: the deploy failed, see Error)';
    case 'deleted':
      return '(gone: the sandbox was deleted)';
    case 'expired':
      return '(gone: the sandbox expired)';
    default:
      return '(not deployed yet)';
  }
}

function lifetimeRow(sandbox: Sandbox): [string, string] {
  switch (sandbox.status) {
    case 'deleted':
      return ['Deleted', sandbox.updated_at];
    case 'expired':
      return ['Expired', sandbox.expires_at];
    default:
      return ['Expires', `${sandbox.expires_at} (TTL ${sandbox.ttl_minutes} min)`];
  }
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
