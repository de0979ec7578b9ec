import type { Sandbox, TwinSet } from '../client/types.ts';

type Cell = string | { data: string; header?: boolean };

/** The parts of `core.summary` we use, so rendering stays a plain function of the sandbox. */
export interface SummaryWriter {
  addHeading(text: string, level?: number): SummaryWriter;
  addRaw(text: string, addEOL?: boolean): SummaryWriter;
  addTable(rows: Cell[][]): SummaryWriter;
  addLink(text: string, href: string): SummaryWriter;
  addBreak(): SummaryWriter;
  write(): Promise<unknown>;
}

/**
 * The job summary: where the app is, which twins it talks to, and when it goes away. Tokens and
 * variable values are left out on purpose: summaries are readable by anyone who can see the run.
 */
export async function writeSummary(summary: SummaryWriter, sandbox: Sandbox): Promise<void> {
  summary.addHeading(`Twinbox sandbox ${sandbox.status}`, 2);
  summary.addRaw('App: ');
  if (sandbox.app_url) summary.addLink(sandbox.app_url, sandbox.app_url);
  else summary.addRaw('not deployed yet');
  summary.addBreak();
  summary.addRaw(`Sandbox: <code>${escapeHtml(sandbox.sandbox_id)}</code>`).addBreak();
  summary
    .addRaw(`Source: ${escapeHtml(sandbox.repo)} ${escapeHtml(sandbox.pr_url ?? sandbox.branch ?? '')}`)
    .addBreak();
  summary.addRaw(`Expires: ${sandbox.expires_at} (TTL ${sandbox.ttl_minutes} min)`, true);
  if (sandbox.error) summary.addRaw(`\n\nError: ${escapeHtml(sandbox.error)}`, true);
  const twins = Object.entries(sandbox.twins);
  if (twins.length) {
    summary.addHeading('Twins', 3);
    summary.addTable([
      [
        { data: 'Twin', header: true },
        { data: 'Base URL', header: true },
        { data: 'Variables', header: true },
      ],
      ...twins.map(([name, twin]) => [name, twin.base_url, Object.keys(twin.env_vars).sort().join(', ')]),
    ]);
  }
  await summary.write();
}

/** `mode: twins`: where each twin is and which variables the later steps got; no values, no tokens. */
export async function writeTwinSetSummary(summary: SummaryWriter, set: TwinSet): Promise<void> {
  summary.addHeading(`Twinbox twins ${set.status}`, 2);
  summary.addRaw(`Twin set: <code>${escapeHtml(set.id)}</code>`).addBreak();
  summary.addRaw(`Expires: ${set.expires_at} (TTL ${set.ttl_minutes} min)`, true);
  if (set.error) summary.addRaw(`\n\nError: ${escapeHtml(set.error)}`, true);
  const twins = Object.entries(set.twins);
  if (twins.length) {
    summary.addTable([
      [
        { data: 'Twin', header: true },
        { data: 'Base URL', header: true },
        { data: 'Variables exported', header: true },
      ],
      ...twins.map(([name, twin]) => [name, twin.base_url, Object.keys(twin.env_vars).sort().join(', ')]),
    ]);
  }
  await summary.write();
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
}
