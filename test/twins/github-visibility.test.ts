/**
 * The GitHub twin's private-repository gate finds repositories through an index kept beside the engine's
 * store (server/twins/engine/folded-index.ts), not a scan: these check it follows every change, through
 * @octokit/rest (create, rename, delete, reset) and on the engine's store itself (restore of a snapshot).
 * The engine answers an anonymous read of a private repository 401; GitHub, and so the gate, 404: a 404
 * shows the gate found the repository under the name asked for.
 */
import t from 'tap';
import { startEngine } from '../../server/twins/engine/emulate.ts';
import { findFolded } from '../../server/twins/engine/folded-index.ts';
import { startGitHubTwin } from '../../examples/github-twin.ts';
import { statusOf } from './helpers.ts';
import { githubClient } from './vendor-schema.ts';

t.test('a private repository created, renamed, deleted and reset is seen by the gate', async (t) => {
  const gh = await startGitHubTwin({
    seed: {
      users: [{ login: 'octocat' }, { login: 'mallory' }],
      repos: [{ owner: 'octocat', name: 'secret', private: true, files: { 'index.js': '1\n' } }],
    },
  });
  t.teardown(() => gh.close());
  const anonymous = githubClient({ baseUrl: gh.baseUrl });
  const owner = githubClient({ baseUrl: gh.baseUrl, auth: gh.token });
  // statusOf gives a failed call's status; a call that succeeds is a 200 here.
  const anonymousStatus = async (repo: string) =>
    (await statusOf(anonymous.rest.repos.get({ owner: 'octocat', repo }))) ?? 200;

  // Created after start.
  await owner.rest.repos.createForAuthenticatedUser({ name: 'Later', private: true, auto_init: true });
  t.equal(await anonymousStatus('Later'), 404, 'created private: hidden');
  t.equal(await anonymousStatus('LATER'), 404, 'under any case of its name');
  t.equal(
    (await owner.rest.repos.get({ owner: 'octocat', repo: 'Later' })).status,
    200,
    'the owner reads it',
  );
  const tarball = await owner.rest.repos.downloadTarballArchive({
    owner: 'octocat',
    repo: 'Later',
    ref: 'main',
  });
  t.match(tarball.url, /\?token=[0-9a-f]+$/, 'its codeload link carries a token: the repository is private');

  // Renamed: the new name is private, the old one is free for another repository.
  await owner.rest.repos.update({ owner: 'octocat', repo: 'Later', name: 'renamed' });
  t.equal(await anonymousStatus('renamed'), 404, 'renamed: hidden under its new name');
  t.equal((await owner.rest.repos.get({ owner: 'octocat', repo: 'renamed' })).data.name, 'renamed');
  await owner.rest.repos.createForAuthenticatedUser({ name: 'Later' });
  t.equal(await anonymousStatus('Later'), 200, 'a public repository under the old name is readable');

  // Made public, then deleted and its name taken by a public repository.
  await owner.rest.repos.update({ owner: 'octocat', repo: 'renamed', private: false });
  t.equal(await anonymousStatus('renamed'), 200, 'made public: readable');
  await owner.rest.repos.update({ owner: 'octocat', repo: 'renamed', private: true });
  t.equal(await anonymousStatus('renamed'), 404, 'private again: hidden');
  await owner.rest.repos.delete({ owner: 'octocat', repo: 'renamed' });
  t.equal(await statusOf(owner.rest.repos.get({ owner: 'octocat', repo: 'renamed' })), 404, 'deleted');
  await owner.rest.repos.createForAuthenticatedUser({ name: 'renamed' });
  t.equal(await anonymousStatus('renamed'), 200, 'its name reused by a public repository: readable');

  // Reset: back to the seed, whose private repository had been renamed away.
  await owner.rest.repos.update({ owner: 'octocat', repo: 'secret', name: 'exposed', private: false });
  t.equal(await anonymousStatus('exposed'), 200);
  await gh.admin.reset();
  t.equal(await anonymousStatus('secret'), 404, 'after reset the seeded private repository is hidden again');
  t.equal((await owner.rest.repos.get({ owner: 'octocat', repo: 'secret' })).status, 200);
  t.equal(await anonymousStatus('exposed'), 404, 'the renamed one is gone');
  t.equal(await anonymousStatus('Later'), 404, 'repositories created after start are gone');
});

t.test('the index follows the engine store: update, delete, clear and restore', async (t) => {
  const engine = await startEngine('github', 'http://127.0.0.1:9', {} as never);
  const repos = engine.store.collection('github.repos', ['owner_id', 'full_name']);
  const alpha = repos.insert({ full_name: 'octocat/Alpha', private: true });
  t.equal(findFolded(repos, 'full_name', 'OCTOCAT/alpha')?.id, alpha.id, 'found ignoring case');
  const snapshot = engine.store.snapshot();

  repos.update(alpha.id, { full_name: 'octocat/beta' });
  t.equal(findFolded(repos, 'full_name', 'octocat/alpha'), undefined, 'renamed: not under the old name');
  t.equal(findFolded(repos, 'full_name', 'octocat/Beta')?.id, alpha.id, 'renamed: under the new name');
  const gamma = repos.insert({ full_name: 'octocat/gamma' });
  t.equal(
    findFolded(repos, 'full_name', 'octocat/gamma')?.id,
    gamma.id,
    'inserted after the index was built',
  );
  repos.delete(gamma.id);
  t.equal(findFolded(repos, 'full_name', 'octocat/gamma'), undefined, 'deleted');

  engine.store.restore(snapshot);
  t.equal(findFolded(repos, 'full_name', 'octocat/alpha')?.id, alpha.id, 'restored: under its saved name');
  t.equal(findFolded(repos, 'full_name', 'octocat/beta'), undefined, 'restored: the later name is gone');

  engine.reset();
  t.equal(findFolded(repos, 'full_name', 'octocat/alpha'), undefined, 'reset: cleared');
  const again = repos.insert({ full_name: 'octocat/alpha' });
  t.equal(findFolded(repos, 'full_name', 'octocat/ALPHA')?.id, again.id, 'and filled again');
});
