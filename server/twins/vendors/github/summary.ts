import type { TwinSummary } from '../../contract.ts';
import { engineItems, newestFirst, summaryTable, text } from '../../kit/summary.ts';

/** The GitHub twin's snapshot (the engine's collections) as repositories, issues and pull requests. */
export function summarizeGitHub(state: unknown): TwinSummary {
  const logins = new Map<unknown, string>();
  for (const user of engineItems(state, 'github.users')) logins.set(user.id, text(user.login));
  for (const org of engineItems(state, 'github.orgs')) logins.set(`org:${text(org.id)}`, text(org.login));
  const repos = newestFirst(engineItems(state, 'github.repos'));
  const repoNames = new Map(repos.map((r) => [r.id, text(r.full_name)]));
  const ref = (item: Record<string, unknown>) =>
    `${repoNames.get(item.repo_id) ?? `repo ${text(item.repo_id)}`}#${text(item.number)}`;
  return {
    tables: [
      summaryTable(
        'Repositories',
        ['Repository', 'Visibility', 'Default branch', 'Open issues', 'Created'],
        repos.map((r) => [
          text(r.full_name),
          r.private === true ? 'private' : 'public',
          text(r.default_branch),
          text(r.open_issues_count),
          text(r.created_at),
        ]),
      ),
      summaryTable(
        'Issues',
        ['Issue', 'Title', 'State', 'Author', 'Comments', 'Created'],
        newestFirst(engineItems(state, 'github.issues'))
          .filter((i) => i.is_pull_request !== true)
          .map((i) => [
            ref(i),
            text(i.title),
            text(i.state),
            logins.get(i.user_id) ?? '',
            text(i.comments),
            text(i.created_at),
          ]),
      ),
      summaryTable(
        'Pull requests',
        ['Pull request', 'Title', 'State', 'Branches', 'Author', 'Created'],
        newestFirst(engineItems(state, 'github.pull_requests')).map((p) => [
          ref(p),
          text(p.title),
          p.merged === true ? 'merged' : text(p.state),
          `${text(p.head_ref)} → ${text(p.base_ref)}`,
          logins.get(p.user_id) ?? '',
          text(p.created_at),
        ]),
      ),
    ],
  };
}
