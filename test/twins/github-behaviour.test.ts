/**
 * GitHub's behaviour beyond its schema (issue 23, part 2), each gap driven with @octokit/rest and every
 * answer checked against GitHub's description (githubClient). Where GitHub documents a behaviour outside
 * its OpenAPI description, the test cites the page.
 */
import t, { type Test } from 'tap';
import { RequestError } from '@octokit/request-error';
import { startGitHubTwin, type StandaloneGitHubTwin } from '../../examples/github-twin.ts';
import { statusOf } from './helpers.ts';
import { githubClient } from './vendor-schema.ts';

const CLIENT_ID = 'Iv1.behaviour';
const CLIENT_SECRET = 'behaviour-secret-123';
const REDIRECT = 'http://127.0.0.1/callback';

const seed = {
  users: [{ login: 'octocat' }, { login: 'hubot' }, { login: 'mona' }],
  orgs: [
    {
      login: 'acme',
      members: [
        { login: 'octocat', role: 'admin' },
        { login: 'mona', role: 'member' },
      ],
    },
  ],
  repos: [
    { owner: 'octocat', name: 'shop', files: { 'README.md': '# shop\n' } },
    { owner: 'octocat', name: 'vault', private: true },
    { owner: 'acme', name: 'tools', private: true },
  ],
  oauth_apps: [{ client_id: CLIENT_ID, client_secret: CLIENT_SECRET, redirect_uris: [REDIRECT] }],
};

async function twin(t: Test) {
  const gh = await startGitHubTwin({ seed });
  t.teardown(() => gh.close());
  return { gh, octokit: githubClient({ auth: gh.token, baseUrl: gh.baseUrl }) };
}

/** A user's token through GitHub's web flow (consent form, then the code exchanged). */
async function clientAs(gh: StandaloneGitHubTwin, login: string) {
  const approve = await fetch(new URL('/login/oauth/callback', gh.baseUrl), {
    method: 'POST',
    redirect: 'manual',
    body: new URLSearchParams({
      login,
      client_id: CLIENT_ID,
      redirect_uri: REDIRECT,
      scope: 'repo',
      state: 's',
    }),
  });
  const code = new URL(approve.headers.get('location')!).searchParams.get('code');
  const response = await fetch(new URL('/login/oauth/access_token', gh.baseUrl), {
    method: 'POST',
    headers: { accept: 'application/json', 'content-type': 'application/json' },
    body: JSON.stringify({ client_id: CLIENT_ID, client_secret: CLIENT_SECRET, code }),
  });
  const { access_token } = (await response.json()) as { access_token: string };
  return githubClient({ auth: access_token, baseUrl: gh.baseUrl });
}

/** The RequestError a call rejects with (fails the test when it does not reject). */
async function failure(t: Test, call: Promise<unknown>): Promise<RequestError> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  t.type(error, RequestError, 'rejects with a RequestError');
  return error as RequestError;
}

t.test('PUT /notifications marks everything read: 205 Reset Content', async (t) => {
  const { octokit } = await twin(t);
  const marked = await octokit.activity.markNotificationsAsRead({ last_read_at: new Date().toISOString() });
  t.equal(marked.status, 205);
  t.equal(
    await statusOf(
      githubClient({ baseUrl: octokit.request.endpoint.DEFAULTS.baseUrl }).activity.markNotificationsAsRead(),
    ),
    401,
    'a token is needed',
  );
});

t.test('collaborators: invitations accepted and declined, the list with roles', async (t) => {
  const { gh, octokit } = await twin(t);
  const hubot = await clientAs(gh, 'hubot');
  const mona = await clientAs(gh, 'mona');
  const shop = { owner: 'octocat', repo: 'shop' };

  const invited = await octokit.repos.addCollaborator({ ...shop, username: 'hubot', permission: 'push' });
  t.equal(invited.status, 201, 'someone new is invited: 201');
  t.equal(invited.data.invitee?.login, 'hubot');
  t.equal(invited.data.inviter?.login, 'octocat');
  t.equal(invited.data.permissions, 'write', 'push is the write role');
  t.equal(invited.data.repository.full_name, 'octocat/shop');
  t.equal(await statusOf(octokit.repos.checkCollaborator({ ...shop, username: 'hubot' })), 404, 'not yet');

  const pending = (await octokit.repos.listInvitations(shop)).data;
  t.same(
    pending.map((i) => [i.id, i.invitee?.login]),
    [[invited.data.id, 'hubot']],
  );
  const updated = await octokit.repos.updateInvitation({
    ...shop,
    invitation_id: invited.data.id,
    permissions: 'triage',
  });
  t.equal(updated.data.permissions, 'triage');
  t.equal((await failure(t, hubot.repos.listInvitations(shop))).status, 403, 'only admins see them');

  const mine = (await hubot.repos.listInvitationsForAuthenticatedUser()).data;
  t.same(
    mine.map((i) => i.id),
    [invited.data.id],
  );
  t.equal(
    (await failure(t, mona.repos.acceptInvitationForAuthenticatedUser({ invitation_id: invited.data.id })))
      .status,
    404,
    "someone else's invitation is 404",
  );
  const accepted = await hubot.repos.acceptInvitationForAuthenticatedUser({ invitation_id: invited.data.id });
  t.equal(accepted.status, 204);
  t.same((await hubot.repos.listInvitationsForAuthenticatedUser()).data, []);
  t.same((await octokit.repos.listInvitations(shop)).data, []);
  t.equal((await octokit.repos.checkCollaborator({ ...shop, username: 'hubot' })).status, 204);
  const level = (await octokit.repos.getCollaboratorPermissionLevel({ ...shop, username: 'hubot' })).data;
  t.equal(level.role_name, 'triage');

  const again = await octokit.repos.addCollaborator({ ...shop, username: 'hubot', permission: 'pull' });
  t.equal(again.status, 204, 'an existing collaborator: 204, the permission changed');
  t.equal(
    (await octokit.repos.getCollaboratorPermissionLevel({ ...shop, username: 'hubot' })).data.role_name,
    'read',
  );

  const list = (await octokit.repos.listCollaborators(shop)).data;
  t.same(
    list.map((c) => [c.login, c.role_name, c.permissions?.admin, c.permissions?.pull]),
    [
      ['hubot', 'read', false, true],
      ['octocat', 'admin', true, true],
    ],
    'the owner and the collaborator, each with permissions and role_name',
  );
  t.same(
    (await octokit.repos.listCollaborators({ ...shop, affiliation: 'direct' })).data.map((c) => c.login),
    ['hubot'],
  );

  const toMona = await octokit.repos.addCollaborator({ ...shop, username: 'mona' });
  t.equal(toMona.data.permissions, 'write', 'the default permission is push');
  t.equal(
    (await mona.repos.declineInvitationForAuthenticatedUser({ invitation_id: toMona.data.id })).status,
    204,
  );
  t.equal(await statusOf(octokit.repos.checkCollaborator({ ...shop, username: 'mona' })), 404, 'declined');

  const bad = await failure(
    t,
    octokit.repos.addCollaborator({ ...shop, username: 'mona', permission: 'owner' }),
  );
  t.equal(bad.status, 422);
  t.same((bad.response?.data as { errors?: unknown }).errors, [
    { resource: 'Repository', code: 'invalid', field: 'permission' },
  ]);

  // An organization's repository: its owners are listed as admins, members by the base permission.
  const tools = { owner: 'acme', repo: 'tools' };
  const orgList = (await octokit.repos.listCollaborators(tools)).data;
  t.same(
    orgList.map((c) => [c.login, c.role_name, c.permissions?.push]),
    [
      ['mona', 'read', false],
      ['octocat', 'admin', true],
    ],
  );
  const member = await octokit.repos.addCollaborator({ ...tools, username: 'mona', permission: 'push' });
  t.equal(member.status, 204, 'an organization member is added at once, no invitation');
  t.equal(
    (await octokit.repos.listCollaborators(tools)).data.find((c) => c.login === 'mona')?.role_name,
    'write',
  );
  const outsider = await octokit.repos.addCollaborator({ ...tools, username: 'hubot' });
  t.equal(outsider.status, 201);
  t.equal(
    (await octokit.repos.deleteInvitation({ ...tools, invitation_id: outsider.data.id })).status,
    204,
    'an admin withdraws the invitation',
  );
  t.same((await hubot.repos.listInvitationsForAuthenticatedUser()).data, []);
});

t.test('a renamed repository redirects: 301 for GET, 307 for PATCH, to /repositories/{id}', async (t) => {
  // https://docs.github.com/rest/using-the-rest-api/best-practices-for-using-the-rest-api#follow-redirects
  // and https://docs.github.com/repositories/creating-and-managing-repositories/renaming-a-repository:
  // GitHub redirects every API request to a renamed repository's old name. /repositories/{id} is not in
  // its OpenAPI description, so those calls are made with plain fetch.
  const { gh, octokit } = await twin(t);
  const renamed = await octokit.repos.update({ owner: 'octocat', repo: 'shop', name: 'store' });
  t.equal(renamed.data.full_name, 'octocat/store');
  const id = renamed.data.id;
  const origin = new URL(gh.baseUrl).origin;
  const auth = { authorization: `token ${gh.token}`, 'content-type': 'application/json' };

  const get = await fetch(`${gh.baseUrl}/repos/octocat/shop/issues?state=all`, {
    headers: auth,
    redirect: 'manual',
  });
  t.equal(get.status, 301);
  t.equal(get.headers.get('location'), `${origin}/repositories/${id}/issues?state=all`);
  t.match(await get.json(), {
    message: 'Moved Permanently',
    url: `${origin}/repositories/${id}/issues?state=all`,
  });
  const patch = await fetch(`${gh.baseUrl}/repos/octocat/shop`, {
    method: 'PATCH',
    headers: auth,
    body: JSON.stringify({ description: 'x' }),
    redirect: 'manual',
  });
  t.equal(patch.status, 307, 'a PATCH is redirected with 307, so it is repeated there');
  t.equal(patch.headers.get('location'), `${origin}/repositories/${id}`);

  // Octokit follows both (GitHub's description documents 301 for GET and 307 for PATCH of a repository).
  t.equal((await octokit.repos.get({ owner: 'octocat', repo: 'shop' })).data.full_name, 'octocat/store');
  const edited = await octokit.repos.update({ owner: 'octocat', repo: 'shop', description: 'Renamed' });
  t.equal(edited.data.description, 'Renamed', 'the PATCH reached the repository');

  const byId = await fetch(`${gh.baseUrl}/repositories/${id}`, { headers: auth });
  t.equal(byId.status, 200);
  t.equal(((await byId.json()) as { full_name: string }).full_name, 'octocat/store');
  const patchById = await fetch(`${gh.baseUrl}/repositories/${id}`, {
    method: 'PATCH',
    headers: auth,
    body: JSON.stringify({ has_wiki: false }),
  });
  t.equal(patchById.status, 200, 'PATCH /repositories/{id} is served');
  t.equal(((await patchById.json()) as { has_wiki: boolean }).has_wiki, false);
  t.equal((await fetch(`${gh.baseUrl}/repositories/999999`, { headers: auth })).status, 404);

  // A private repository's old name tells a stranger nothing.
  await octokit.repos.update({ owner: 'octocat', repo: 'vault', name: 'safe' });
  const stranger = await fetch(`${gh.baseUrl}/repos/octocat/vault`, { redirect: 'manual' });
  t.equal(stranger.status, 404);
  t.equal(
    (await fetch(`${gh.baseUrl}/repos/octocat/vault`, { headers: auth, redirect: 'manual' })).status,
    301,
    'its owner is redirected',
  );
  // A new repository under the old name is itself, no longer a redirect.
  await octokit.repos.createForAuthenticatedUser({ name: 'shop' });
  t.equal((await octokit.repos.get({ owner: 'octocat', repo: 'shop' })).data.id === id, false);
});

t.test('GET pulls/{n}/merge: 404 before the merge, 204 after', async (t) => {
  const { gh, octokit } = await twin(t);
  const shop = { owner: 'octocat', repo: 'shop' };
  await gh.pushFiles({ ...shop, branch: 'feature', files: { 'a.txt': 'a' }, message: 'a' });
  const pr = (await octokit.pulls.create({ ...shop, head: 'feature', base: 'main', title: 'A' })).data;
  t.equal((await failure(t, octokit.pulls.checkIfMerged({ ...shop, pull_number: pr.number }))).status, 404);
  await octokit.pulls.merge({ ...shop, pull_number: pr.number });
  t.equal((await octokit.pulls.checkIfMerged({ ...shop, pull_number: pr.number })).status, 204);
  t.equal(await statusOf(octokit.pulls.checkIfMerged({ ...shop, pull_number: 999 })), 404);
});

t.test("a new repository has GitHub's nine default labels", async (t) => {
  const { octokit } = await twin(t);
  const created = await octokit.repos.createForAuthenticatedUser({ name: 'fresh' });
  const labels = (await octokit.issues.listLabelsForRepo({ owner: 'octocat', repo: created.data.name })).data;
  t.same(labels.map((l) => [l.name, l.color, l.default]).sort(), [
    ['bug', 'd73a4a', true],
    ['documentation', '0075ca', true],
    ['duplicate', 'cfd3d7', true],
    ['enhancement', 'a2eeef', true],
    ['good first issue', '7057ff', true],
    ['help wanted', '008672', true],
    ['invalid', 'e4e669', true],
    ['question', 'd876e3', true],
    ['wontfix', 'ffffff', true],
  ]);
  t.equal(labels.find((l) => l.name === 'bug')?.description, "Something isn't working");
  const org = await octokit.repos.createInOrg({ org: 'acme', name: 'fresh' });
  t.equal((await octokit.issues.listLabelsForRepo({ owner: 'acme', repo: org.data.name })).data.length, 9);
});

t.test("every 422 carries GitHub's errors array and documentation_url", async (t) => {
  const { octokit } = await twin(t);
  const shop = { owner: 'octocat', repo: 'shop' };
  const cases: Array<[string, () => Promise<unknown>, unknown]> = [
    [
      'a label that exists',
      async () => {
        await octokit.issues.createLabel({ ...shop, name: 'area/api' });
        return octokit.issues.createLabel({ ...shop, name: 'area/api' });
      },
      [{ resource: 'Label', code: 'already_exists', field: 'name' }],
    ],
    [
      'an issue without a title',
      () => octokit.request('POST /repos/{owner}/{repo}/issues', { ...shop } as never),
      [{ resource: 'Issue', code: 'missing_field', field: 'title' }],
    ],
    [
      'a repository name taken',
      () => octokit.repos.createForAuthenticatedUser({ name: 'shop' }),
      [{ resource: 'Repository', code: 'already_exists', field: 'name' }],
    ],
    [
      'a ref that exists',
      async () => {
        const main = (await octokit.git.getRef({ ...shop, ref: 'heads/main' })).data;
        return octokit.git.createRef({ ...shop, ref: 'refs/heads/main', sha: main.object.sha });
      },
      [{ resource: 'Reference', code: 'already_exists', field: 'ref' }],
    ],
    [
      'Markdown without text',
      () => octokit.request('POST /markdown', { mode: 'gfm' } as never),
      [{ resource: 'Markdown', code: 'missing_field', field: 'text' }],
    ],
  ];
  for (const [what, call, errors] of cases) {
    const error = await failure(t, call());
    t.equal(error.status, 422, what);
    const body = error.response?.data as { errors?: unknown; documentation_url?: string };
    t.same(body.errors, errors, `${what}: errors`);
    t.match(body.documentation_url, /^https:\/\/docs\.github\.com\//, `${what}: documentation_url`);
  }
});

t.test('a second release asset of the same name is 422 already_exists', async (t) => {
  const { gh, octokit } = await twin(t);
  const shop = { owner: 'octocat', repo: 'shop' };
  const release = (await octokit.repos.createRelease({ ...shop, tag_name: 'v1.0.0' })).data;
  // Octokit uploads to uploads.github.com by default; the twin serves that host's routes too.
  const upload = () =>
    octokit.repos.uploadReleaseAsset({
      ...shop,
      release_id: release.id,
      name: 'app.zip',
      data: 'zip bytes',
      headers: { 'content-type': 'application/zip' },
      baseUrl: gh.baseUrl,
    });
  t.equal((await upload()).status, 201);
  const second = await failure(t, upload());
  t.equal(second.status, 422);
  t.same((second.response?.data as { errors?: unknown }).errors, [
    { resource: 'ReleaseAsset', code: 'already_exists', field: 'name' },
  ]);
  t.equal((await octokit.repos.listReleaseAssets({ ...shop, release_id: release.id })).data.length, 1);
});

t.test('the keys GitHub sends: repositories, organizations to their owners, branch protection', async (t) => {
  const { gh, octokit } = await twin(t);
  const repo = (await octokit.repos.get({ owner: 'acme', repo: 'tools' })).data;
  t.equal(repo.organization?.login, 'acme', 'an organization repository names its organization');
  t.equal(repo.organization?.type, 'Organization');
  t.match(repo, {
    temp_clone_token: null,
    web_commit_signoff_required: false,
    allow_update_branch: false,
    use_squash_pr_title_as_default: false,
    network_count: 0,
    subscribers_count: 1,
  });
  t.same(repo.permissions, { admin: true, maintain: true, push: true, triage: true, pull: true });
  const own = (await octokit.repos.get({ owner: 'octocat', repo: 'shop' })).data;
  t.notOk('organization' in own, "a user's repository has no organization");
  const mona = await clientAs(gh, 'mona');
  t.same(
    (await mona.repos.get({ owner: 'octocat', repo: 'shop' })).data.permissions,
    { admin: false, maintain: false, push: false, triage: false, pull: true },
    "permissions are the caller's",
  );

  const org = (await octokit.orgs.get({ org: 'acme' })).data;
  t.match(org, {
    total_private_repos: 1,
    owned_private_repos: 1,
    members_can_create_repositories: true,
    members_can_create_public_repositories: true,
    members_can_create_private_repositories: true,
    members_allowed_repository_creation_type: 'all',
    two_factor_requirement_enabled: false,
    plan: { name: 'free', filled_seats: 2, seats: 2 },
  });
  const asMember = (await mona.orgs.get({ org: 'acme' })).data;
  t.notOk(
    'plan' in asMember || 'total_private_repos' in asMember || 'billing_email' in asMember,
    'owners only',
  );

  const shop = { owner: 'octocat', repo: 'shop', branch: 'main' };
  const put = await octokit.repos.updateBranchProtection({
    ...shop,
    required_status_checks: null,
    enforce_admins: false,
    required_pull_request_reviews: null,
    restrictions: null,
    block_creations: true,
  });
  t.same(put.data.block_creations, { enabled: true });
  const read = (await octokit.repos.getBranchProtection(shop)).data;
  t.same(read.block_creations, { enabled: true }, 'kept');
  t.same(read.allow_force_pushes, { enabled: false });
  t.same(read.required_linear_history, { enabled: false });
});

t.test(
  "a repository read again is the caller's as it is now, though the repository did not change",
  async (t) => {
    // The twin reuses a repository answer it finished for the same engine answer and the same access
    // (shape.ts, `repositories`): a role that changed, or another caller, must still show.
    const { gh, octokit } = await twin(t);
    const shop = { owner: 'octocat', repo: 'shop' };
    const hubot = await clientAs(gh, 'hubot');
    const anonymous = githubClient({ baseUrl: gh.baseUrl });
    const before = (await hubot.repos.get(shop)).data;
    t.same(before.permissions, { admin: false, maintain: false, push: false, triage: false, pull: true });
    t.notOk('permissions' in (await anonymous.repos.get(shop)).data, 'none for an anonymous caller');
    t.equal((await octokit.repos.get(shop)).data.permissions?.admin, true, "the owner's");
    t.notOk('permissions' in (await anonymous.repos.get(shop)).data, 'still none');

    const invited = await octokit.repos.addCollaborator({ ...shop, username: 'hubot', permission: 'push' });
    await hubot.repos.acceptInvitationForAuthenticatedUser({ invitation_id: invited.data.id });
    const after = (await hubot.repos.get(shop)).data;
    t.equal(after.updated_at, before.updated_at, 'the repository itself is as it was');
    t.same(after.permissions, { admin: false, maintain: false, push: true, triage: true, pull: true });
    t.equal((await hubot.repos.get(shop)).data.permissions?.push, true, 'and again');
  },
);

t.test('the older team route /teams/{id}/repos/{owner}/{repo} (PUT, GET, DELETE)', async (t) => {
  // Deprecated for /orgs/{org}/teams/{slug}/repos/... and still served:
  // https://docs.github.com/rest/teams/teams#add-or-update-team-repository-permissions-legacy
  const { gh, octokit } = await twin(t);
  const team = (await octokit.teams.create({ org: 'acme', name: 'Devs' })).data;
  const target = { team_id: team.id, owner: 'acme', repo: 'tools' };
  const put = await octokit.request('PUT /teams/{team_id}/repos/{owner}/{repo}', {
    ...target,
    permission: 'push',
  });
  t.equal(put.status, 204);
  t.same(
    (await octokit.teams.listReposInOrg({ org: 'acme', team_slug: team.slug })).data.map((r) => r.full_name),
    ['acme/tools'],
    'the same as the slug route',
  );
  t.equal((await octokit.request('GET /teams/{team_id}/repos/{owner}/{repo}', target)).status, 204);
  const detailed = await octokit.request('GET /teams/{team_id}/repos/{owner}/{repo}', {
    ...target,
    mediaType: { format: 'repository' },
  });
  t.equal(detailed.status, 200);
  t.match(detailed.data, {
    full_name: 'acme/tools',
    role_name: 'write',
    permissions: { push: true, admin: false },
  });
  const bad = await failure(
    t,
    octokit.request('PUT /teams/{team_id}/repos/{owner}/{repo}', {
      ...target,
      permission: 'owner' as 'push',
    }),
  );
  t.equal(bad.status, 422);
  const mona = await clientAs(gh, 'mona');
  t.equal(
    await statusOf(
      mona.request('PUT /teams/{team_id}/repos/{owner}/{repo}', { ...target, permission: 'admin' }),
    ),
    403,
    'a member who does not own the organization',
  );
  t.equal((await octokit.request('DELETE /teams/{team_id}/repos/{owner}/{repo}', target)).status, 204);
  t.equal(await statusOf(octokit.request('GET /teams/{team_id}/repos/{owner}/{repo}', target)), 404);
});

t.test('API versions: 2022-11-28 served and named, any other version 400', async (t) => {
  // https://docs.github.com/rest/about-the-rest-api/api-versions: without the header, 2022-11-28; a
  // version GitHub does not serve is 400.
  const { gh, octokit } = await twin(t);
  const versions = await octokit.meta.getAllVersions();
  t.same(versions.data, ['2022-11-28']);
  t.equal(versions.headers['x-github-api-version-selected'], '2022-11-28');
  const pinned = await octokit.repos.get({
    owner: 'octocat',
    repo: 'shop',
    headers: { 'x-github-api-version': '2022-11-28' },
  });
  t.equal(pinned.headers['x-github-api-version-selected'], '2022-11-28', 'the version asked for');
  const refused = await failure(
    t,
    octokit.repos.get({ owner: 'octocat', repo: 'shop', headers: { 'x-github-api-version': '2019-01-01' } }),
  );
  t.equal(refused.status, 400);
  t.match((refused.response?.data as { message: string }).message, /X-GitHub-Api-Version/);
  const raw = await fetch(`${gh.baseUrl}/repos/octocat/shop`);
  t.equal(raw.headers.get('x-github-api-version-selected'), '2022-11-28', 'on anonymous reads too');
});
