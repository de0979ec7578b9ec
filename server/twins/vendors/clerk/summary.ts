import type { TwinSummary } from '../../contract.ts';
import { engineItems, newestFirst, summaryTable, text } from '../../kit/summary.ts';

const name = (u: Record<string, unknown>) => [u.first_name, u.last_name].filter(Boolean).map(text).join(' ');

/**
 * The Clerk twin's snapshot as users (with their primary email), organizations with their members, and
 * sessions. Passwords (hashes) and private metadata are left out.
 */
export function summarizeClerk(state: unknown): TwinSummary {
  const users = engineItems(state, 'clerk.users');
  const emails = engineItems(state, 'clerk.emails');
  const orgs = engineItems(state, 'clerk.orgs');
  const primaryEmail = new Map(emails.map((e) => [e.email_id, text(e.email_address)]));
  const userLabel = new Map(
    users.map((u) => [u.clerk_id, primaryEmail.get(u.primary_email_address_id) ?? text(u.clerk_id)]),
  );
  const orgName = new Map(orgs.map((o) => [o.clerk_id, text(o.name)]));
  return {
    tables: [
      summaryTable(
        'Users',
        ['Id', 'Email', 'Name', 'Username', 'Banned'],
        newestFirst(users).map((u) => [
          text(u.clerk_id),
          primaryEmail.get(u.primary_email_address_id) ?? '',
          name(u),
          text(u.username),
          u.banned === true ? 'yes' : 'no',
        ]),
      ),
      summaryTable(
        'Organizations',
        ['Id', 'Name', 'Slug', 'Members'],
        newestFirst(orgs).map((o) => [text(o.clerk_id), text(o.name), text(o.slug), text(o.members_count)]),
      ),
      summaryTable(
        'Memberships',
        ['Organization', 'User', 'Role'],
        newestFirst(engineItems(state, 'clerk.memberships')).map((m) => [
          orgName.get(m.org_id) ?? text(m.org_id),
          userLabel.get(m.user_id) ?? text(m.user_id),
          text(m.role),
        ]),
      ),
      summaryTable(
        'Sessions',
        ['Id', 'User', 'Status'],
        newestFirst(engineItems(state, 'clerk.sessions')).map((s) => [
          text(s.clerk_id),
          userLabel.get(s.user_id) ?? text(s.user_id),
          text(s.status),
        ]),
      ),
    ],
  };
}
