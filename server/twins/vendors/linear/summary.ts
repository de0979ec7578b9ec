import type { TwinSummary } from '../../contract.ts';
import { engineItems, newestFirst, summaryTable, text } from '../../kit/summary.ts';

/** The Linear twin's snapshot as its issues (newest first, with state and assignee) and teams. */
export function summarizeLinear(state: unknown): TwinSummary {
  const byId = (collection: string) =>
    new Map(engineItems(state, collection).map((item) => [text(item.linear_id), item]));
  const states = byId('linear.workflow_states');
  const users = byId('linear.users');
  return {
    tables: [
      summaryTable(
        'Issues',
        ['Identifier', 'Title', 'State', 'Assignee', 'Created'],
        newestFirst(engineItems(state, 'linear.issues')).map((i) => [
          text(i.identifier),
          text(i.title),
          text(states.get(text(i.state_id))?.name),
          text(users.get(text(i.assignee_id))?.email),
          text(i.created_at),
        ]),
      ),
      summaryTable(
        'Teams',
        ['Key', 'Name'],
        engineItems(state, 'linear.teams').map((t) => [text(t.key), text(t.name)]),
      ),
    ],
  };
}
