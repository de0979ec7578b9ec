/** The Disconnect GitHub button of /integrations: a checked form post that drops the link and its token. */
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { createUser, startTestTwinbox } from '../helpers/twinbox.ts';
import { sessionOf } from './helpers.ts';

t.test('/integrations: token status, a disconnect form checked like every form, the link gone', async (t) => {
  const tb = await startTestTwinbox(t);
  const user = await createUser(tb);
  const identityId = randomUUID();
  await tb.store.identities.insert({
    id: identityId,
    account_id: user.id,
    provider: 'github',
    provider_key: 'github:4242',
    login: 'octocat',
    created_at: new Date().toISOString(),
    // What the page reads is whether one is held; the sealing itself is checked in test/e2e/private-repos.
    github_token: {
      access_token: 'v1.sealed',
      refresh_token: null,
      expires_at: null,
      refresh_expires_at: null,
      updated_at: new Date().toISOString(),
    },
  });
  const browser = await sessionOf(tb, user.id);

  const page = await browser.get('/integrations');
  t.equal(page.status, 200);
  t.match(page.body, /Connected as <strong>@octocat<\/strong>/);
  t.match(page.body, /Sandboxes fetch your private repositories with this connection/);
  t.match(page.body, /<form method="post" action="\/integrations\/github\/disconnect">/);

  // Without the form token, or from another site: refused, nothing changed.
  const forged = await browser.post('/integrations/github/disconnect', { csrf: 'not-the-token' });
  t.equal(forged.status, 403);
  const crossSite = await browser.post(
    '/integrations/github/disconnect',
    {},
    {
      origin: 'https://evil.example',
      'sec-fetch-site': 'cross-site',
    },
  );
  t.equal(crossSite.status, 403);
  t.ok(await tb.store.identities.get(identityId), 'still connected after refused posts');

  const done = await browser.post('/integrations/github/disconnect');
  t.equal(done.status, 303);
  t.equal(done.location, '/integrations?disconnected=github');
  t.equal(await tb.store.identities.get(identityId), undefined, 'the link and its token are deleted');
  const after = await browser.get('/integrations?disconnected=github');
  t.match(after.body, /GitHub is disconnected, and its token deleted\./);
  t.match(after.body, /Not connected\./);
  t.notMatch(after.body, /Disconnect GitHub/);
});

t.test('a connection without a token says how to let sandboxes read private repositories', async (t) => {
  const tb = await startTestTwinbox(t);
  const user = await createUser(tb);
  await tb.store.identities.insert({
    id: randomUUID(),
    account_id: user.id,
    provider: 'github',
    provider_key: 'github:4343',
    login: 'hubot',
    created_at: new Date().toISOString(),
  });
  const page = await (await sessionOf(tb, user.id)).get('/integrations');
  t.match(page.body, /holds no GitHub token, so sandboxes can fetch only public\s+repositories/);
  t.match(page.body, /<a href="\/auth\/github\/connect">Connect GitHub again<\/a>/);
});
