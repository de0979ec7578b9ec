import { vendorOf } from '../server/sandboxes/egress.ts';
import type { SandboxRecord } from '../server/store/records.ts';

/** Finds the app's one comment on a pull request again; invisible on GitHub. */
export const MARKER = '<!-- twinbox:sandbox -->';

export interface CommentView {
  /** Head commit the comment speaks about. */
  headSha: string;
  prState: 'open' | 'closed';
  /** Why there is no sandbox, or what happened to it (connect, approval, config error, refused, stopped). */
  notice: { kind: string; text: string } | null;
  sandbox: Pick<
    SandboxRecord,
    | 'id'
    | 'status'
    | 'app_url'
    | 'twins'
    | 'expires_at'
    | 'error'
    | 'ended_at'
    | 'created_at'
    | 'blocked_egress'
  > | null;
  /** Base URL of Twinbox, for the link to the sandbox's page. */
  publicUrl: string;
}

const short = (sha: string) => sha.slice(0, 7);

/**
 * The comment's whole body for a state. A pure function of the view, with no clock in it, so the
 * same state renders the same text and an unchanged comment is never written again.
 */
export function renderComment(view: CommentView): string {
  const lines: string[] = [MARKER];
  const { sandbox, notice } = view;
  const commit = `\`${short(view.headSha)}\``;
  if (!sandbox) {
    lines.push(`### Twinbox: no sandbox for ${commit}`, '', notice?.text ?? 'Nothing deployed yet.');
  } else {
    const page = `${view.publicUrl}/dashboard/sandboxes/${sandbox.id}`;
    switch (sandbox.status) {
      case 'queued':
      case 'building':
        lines.push(
          `### Twinbox: deploying ${commit}`,
          '',
          `Sandbox \`${sandbox.id}\` is **${sandbox.status}**. This comment is updated when it is ready.`,
          '',
          `Follow the deploy log live on the [sandbox page](${page}).`,
        );
        break;
      case 'ready': {
        lines.push(`### Twinbox: sandbox ready for ${commit}`, '', `**App:** ${sandbox.app_url}`, '');
        const twins = Object.entries(sandbox.twins).sort(([a], [b]) => a.localeCompare(b));
        if (twins.length) {
          lines.push('| Twin | Base URL |', '| --- | --- |');
          for (const [name, twin] of twins) lines.push(`| ${name} | ${twin.base_url} |`);
        } else {
          lines.push('No twins attached.');
        }
        lines.push(
          '',
          `[Sandbox page](${page}): logs, twins and the timeline of what the app did to them.`,
          '',
          `Expires at ${sandbox.expires_at} · commit ${commit} · sandbox \`${sandbox.id}\``,
        );
        break;
      }
      case 'failed':
        lines.push(
          `### Twinbox: deploy failed for ${commit}`,
          '',
          '```',
          (sandbox.error ?? 'unknown error').replace(/```/g, "'''"),
          '```',
          '',
          `Logs: [sandbox page](${page}). Push a commit or comment \`/twinbox deploy\` to try again.`,
        );
        break;
      case 'expired':
        lines.push(
          `### Twinbox: sandbox expired`,
          '',
          `The sandbox for ${commit} expired at ${sandbox.expires_at}; its app and twins are stopped. ` +
            'Comment `/twinbox deploy` to start a new one.',
        );
        break;
      case 'deleted':
        lines.push(
          `### Twinbox: sandbox deleted`,
          '',
          view.prState === 'closed'
            ? `The pull request was closed, so the sandbox for ${commit} was deleted.`
            : `The sandbox for ${commit} was deleted${sandbox.ended_at ? ` at ${sandbox.ended_at}` : ''}.`,
        );
        break;
    }
    lines.push(...blockedCalls(sandbox.blocked_egress ?? []));
    if (notice) lines.push('', notice.text);
  }
  if (view.prState === 'open') {
    lines.push(
      '',
      '<sub>Commands for people with write access: `/twinbox deploy`, `/twinbox extend [minutes]`, `/twinbox stop`.</sub>',
    );
  }
  return lines.join('\n');
}

/**
 * The outbound-call guard's findings: which real services this code tried to reach. Hosts and ports only,
 * no counts, so another attempt to the same place does not rewrite the comment.
 */
function blockedCalls(blocked: NonNullable<SandboxRecord['blocked_egress']>): string[] {
  if (!blocked.length) return [];
  const places = [...new Set(blocked.map((b) => `${b.host}:${b.port}`))].sort();
  const vendors = [...new Set(blocked.map((b) => vendorOf(b.host)).filter(Boolean))].sort();
  return [
    '',
    vendors.length
      ? `> **Warning:** this code tried to call the real ${vendors.join(', the real ')}; the call was blocked. Use the twin's variables instead.`
      : '> **Warning:** this code tried to reach the network outside its sandbox; the call was blocked.',
    `> Blocked: ${places.map((p) => `\`${p}\``).join(', ')}`,
  ];
}
