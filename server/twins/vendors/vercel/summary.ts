import type { TwinSummary } from '../../contract.ts';
import { engineItems, newestFirst, summaryTable, text } from '../../kit/summary.ts';

const list = (value: unknown) => (Array.isArray(value) ? value.map(text).join(', ') : text(value));

/**
 * The Vercel twin's snapshot as projects, deployments (newest first) and env var names. Values of env vars
 * are left out: they are the app's secrets.
 */
export function summarizeVercel(state: unknown): TwinSummary {
  const projects = engineItems(state, 'vercel.projects');
  const teams = engineItems(state, 'vercel.teams');
  const projectName = new Map(projects.map((p) => [p.uid, text(p.name)]));
  const owner = new Map(teams.map((t) => [t.uid, text(t.slug)]));
  return {
    tables: [
      summaryTable(
        'Projects',
        ['Id', 'Name', 'Team', 'Framework'],
        newestFirst(projects).map((p) => [
          text(p.uid),
          text(p.name),
          owner.get(p.accountId) ?? '',
          text(p.framework),
        ]),
      ),
      summaryTable(
        'Deployments',
        ['Id', 'Project', 'URL', 'Target', 'State', 'Created'],
        newestFirst(engineItems(state, 'vercel.deployments')).map((d) => [
          text(d.uid),
          projectName.get(d.projectId) ?? '',
          text(d.url),
          text(d.target),
          text(d.readyState ?? d.state),
          text(d.created_at),
        ]),
      ),
      summaryTable(
        'Environment variables',
        ['Project', 'Key', 'Type', 'Target'],
        newestFirst(engineItems(state, 'vercel.env_vars')).map((e) => [
          projectName.get(e.projectId) ?? '',
          text(e.key),
          text(e.type),
          list(e.target),
        ]),
      ),
    ],
  };
}
