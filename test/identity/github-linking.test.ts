import t from 'tap';
import { GitHubLinking } from '../../server/identity/github/linking.ts';
import type { GitHubProfile } from '../../server/identity/github/client.ts';
import { signUpVerified, startIdentityTwinbox } from './helpers.ts';

// The GitHub twin always reports one primary, verified address; the rules for the other shapes GitHub
// can return are exercised here on the same linking code the callback uses, over the real store.
const profile = (id: number, login: string, emails: GitHubProfile['emails']): GitHubProfile => ({
  id,
  login,
  emails,
});

t.test('only the primary AND verified, non-noreply address counts', async (t) => {
  const usable = GitHubLinking.usableEmail;
  t.equal(
    usable(profile(1, 'a', [{ email: 'A@Example.com', primary: true, verified: true }])),
    'a@example.com',
  );
  t.equal(
    usable(profile(1, 'a', [{ email: 'a@example.com', primary: true, verified: false }])),
    undefined,
    'case 15',
  );
  t.equal(
    usable(
      profile(1, 'a', [
        { email: 'public@example.com', primary: false, verified: true },
        { email: 'a@example.com', primary: true, verified: false },
      ]),
    ),
    undefined,
    'case 16: a verified non-primary address (e.g. /user.email) is ignored',
  );
  t.equal(
    usable(profile(1, 'a', [{ email: '123+a@users.noreply.github.com', primary: true, verified: true }])),
    undefined,
    'case 17: noreply',
  );
  t.equal(
    usable(profile(1, 'a', [{ email: 'a＠b.com', primary: true, verified: true }])),
    undefined,
    'invalid',
  );
});

t.test(
  'an unverified GitHub e-mail never links nor creates an account with that address (case 15)',
  async (t) => {
    const twinbox = await startIdentityTwinbox(t);
    const local = await signUpVerified(twinbox, 'v@example.com');
    const linking = twinbox.identity.github.linking;
    const outcome = await linking.login(
      profile(77, 'vee', [{ email: 'v@example.com', primary: true, verified: false }]),
    );
    t.match(outcome, { ok: false, error: 'github_email_unverified' });
    t.equal(await twinbox.store.identities.count(), 0);
    t.equal(await twinbox.store.accounts.count(), 1);
    t.same(await twinbox.store.identities.findBy('account_id', local.account.id), []);
  },
);

t.test(
  'keyed on the numeric id: a renamed login is the same account; its old login is someone else',
  async (t) => {
    const twinbox = await startIdentityTwinbox(t);
    const linking = twinbox.identity.github.linking;
    const first = await linking.login(
      profile(1001, 'oldname', [{ email: 'one@example.com', primary: true, verified: true }]),
    );
    t.match(first, { ok: true, change: 'created' });
    const renamed = await linking.login(
      profile(1001, 'newname', [{ email: 'one@example.com', primary: true, verified: true }]),
    );
    t.match(renamed, { ok: true, change: 'none' });
    t.equal(renamed.ok && renamed.account.id, first.ok && first.account.id, 'case 19: same account');
    t.equal((await twinbox.store.identities.findOneBy('provider_key', 'github:1001'))!.login, 'newname');
    const squatter = await linking.login(
      profile(2002, 'oldname', [{ email: 'two@example.com', primary: true, verified: true }]),
    );
    t.match(squatter, { ok: true, change: 'created' });
    t.not(squatter.ok && squatter.account.id, first.ok && first.account.id, 'case 19: a different account');
  },
);
