import t from 'tap';
import { Vercel } from '@vercel/sdk';
import { HTTPClient } from '@vercel/sdk/lib/http';
import { TwinAdminClient } from '../../server/twins/kit/admin-client.ts';
import { TwinHost } from '../../server/twins/runtime/host.ts';
import { PRESETS } from '../../server/scenarios/presets.ts';
import { vercelTwin } from '../../server/twins/vendors/vercel/twin.ts';
import { tempDir, tempHost } from './helpers.ts';
import { compileVendorSchema, vendorFetch } from './vendor-schema.ts';
import { countsFor } from '../scenarios/sdk-counts.ts';
import { twinFactories } from '../../server/twins/registry.ts';

const seed = {
  teams: [{ slug: 'acme', name: 'Acme' }],
  projects: [
    {
      name: 'web',
      team: 'acme',
      framework: 'nextjs',
      env: [{ key: 'NEXT_PUBLIC_SITE', value: 'https://acme.dev', type: 'plain', target: ['production'] }],
    },
  ],
};

// Vercel's description is large: compiled before any twin runs (see compileVendorSchema).
compileVendorSchema('vercel');

/**
 * @vercel/sdk as an app builds it from the twin's variables: the token, and VERCEL_API_URL as `serverURL`.
 * Its HTTP client's fetcher checks every response against Vercel's vendored description.
 */
const vercelClient = (env: Record<string, string>, token = env.VERCEL_TOKEN) =>
  new Vercel({
    bearerToken: token,
    serverURL: env.VERCEL_API_URL,
    httpClient: new HTTPClient({ fetcher: vendorFetch('vercel') }),
  });

t.test(
  'vercel twin: user, teams, projects, env vars, deployments and domains through @vercel/sdk',
  async (t) => {
    const { host } = await tempHost(t);
    const entry = (await host.start('sb', ['vercel'], { adminToken: 'admin', seeds: { vercel: seed } }))
      .vercel!;
    t.equal(entry.env_vars.VERCEL_API_URL, entry.base_url);
    t.ok(entry.env_vars.VERCEL_TOKEN!.length >= 24);
    const vercel = vercelClient(entry.env_vars);

    const { user } = (await vercel.user.getAuthUser())!;
    t.equal((user as { username: string }).username, 'developer', 'the token is the seeded account');
    const teams = await vercel.teams.getTeams({});
    t.same(
      teams.teams.map((team) => (team as { slug: string }).slug),
      ['acme'],
    );
    const team = await vercel.teams.getTeam({ teamId: 'acme' });
    t.equal(team.slug, 'acme', 'a team is the team object itself');
    t.equal(team.name, 'Acme');

    const listed = await vercel.projects.getProjects({ slug: 'acme' });
    const projects = 'projects' in listed ? listed.projects : [];
    t.same(
      projects.map((p) => p.name),
      ['web'],
      'the seeded project',
    );

    const api = await vercel.projects.createProject({
      slug: 'acme',
      requestBody: { name: 'api', framework: 'nextjs' },
    });
    t.equal(api.name, 'api');
    t.match(api.id, /^prj_/);
    const updated = await vercel.projects.updateProject({
      idOrName: 'api',
      slug: 'acme',
      requestBody: { buildCommand: 'npm run build' },
    });
    t.equal(updated.buildCommand, 'npm run build');
    t.equal(
      (await vercel.projects.getProject({ idOrName: api.id, slug: 'acme' })).buildCommand,
      'npm run build',
    );

    const created = await vercel.projects.createProjectEnv({
      idOrName: 'api',
      slug: 'acme',
      upsert: 'true',
      requestBody: {
        key: 'DATABASE_URL',
        value: 'postgres://db/api',
        type: 'encrypted',
        target: ['production'],
      },
    });
    t.ok(created, 'the variable is created');
    const envs = await vercel.projects.filterProjectEnvs({ idOrName: 'api', slug: 'acme' });
    t.same(
      ('envs' in envs ? envs.envs : []).map((e) => e.key),
      ['DATABASE_URL'],
    );
    const webEnvs = await vercel.projects.filterProjectEnvs({ idOrName: 'web', slug: 'acme' });
    t.same(
      ('envs' in webEnvs ? webEnvs.envs : []).map((e) => e.key),
      ['NEXT_PUBLIC_SITE'],
      'the seeded variable',
    );

    const deployment = await vercel.deployments.createDeployment({
      slug: 'acme',
      requestBody: {
        name: 'api',
        project: 'api',
        target: 'production',
        files: [{ file: 'index.html', data: '<h1>hi</h1>' }],
      },
    });
    t.match(deployment.id, /^dpl_/);
    t.equal(deployment.readyState, 'READY', 'deployments become ready');
    const got = await vercel.deployments.getDeployment({ idOrUrl: deployment.id, slug: 'acme' });
    t.equal(got.id, deployment.id);
    const listedDeployments = await vercel.deployments.getDeployments({ slug: 'acme', projectId: api.id });
    t.same(
      listedDeployments.deployments.map((d) => d.uid),
      [deployment.id],
    );

    const domain = await vercel.projects.addProjectDomain({
      idOrName: 'api',
      slug: 'acme',
      requestBody: { name: 'api.acme.dev' },
    });
    t.equal(domain.name, 'api.acme.dev');
    t.equal(domain.apexName, 'acme.dev');
    const domains = await vercel.projects.getProjectDomains({ idOrName: 'api', slug: 'acme' });
    t.same(
      ('domains' in domains ? domains.domains : []).map((d) => d.name),
      ['api.acme.dev'],
    );

    await vercel.projects.deleteProject({ idOrName: 'api', slug: 'acme' });
    await t.rejects(vercel.projects.getProject({ idOrName: 'api', slug: 'acme' }), /404/);

    // The request log keeps the calls and hides the token.
    const admin = new TwinAdminClient(entry.admin_url, 'admin');
    const log = JSON.stringify(await admin.requests());
    t.match(log, /DATABASE_URL/);
    t.match(log, /v13\/deployments/);
    t.notOk(log.includes(entry.env_vars.VERCEL_TOKEN!), 'the token is redacted');

    // The timeline's lines for the calls that changed something.
    const changes = (await admin.requests()).map((e) => vercelTwin.describeChange!(e)).filter(Boolean);
    t.ok(changes.includes('project api created'), 'project created');
    t.ok(changes.includes('env var DATABASE_URL set on project api'));
    t.ok(changes.includes(`deployment ${deployment.id} of api (production)`));
    t.ok(changes.includes('domain api.acme.dev added to project api'));
    t.ok(changes.includes('project api deleted'));

    // The dashboard's summary: projects, deployments and env var names, never their values.
    const summary = vercelTwin.summarize!((await admin.state()).state);
    const table = (title: string) => summary.tables.find((x) => x.title === title)!;
    t.same(
      table('Projects').rows.map((r) => r[1]),
      ['web'],
      'the deleted project is gone',
    );
    t.same(
      table('Environment variables').rows.map((r) => [r[0], r[1]]),
      [['web', 'NEXT_PUBLIC_SITE']],
    );
    t.equal(table('Deployments').rows.length, 0, 'deleting a project deletes its deployments');
    t.notOk(JSON.stringify(summary).includes('postgres://db/api'), 'no env var values');

    await admin.addFault({ rate_limit: true, count: 1 });
    const limited = await fetch(`${entry.base_url}/v2/user`, {
      headers: { authorization: `Bearer ${entry.env_vars.VERCEL_TOKEN}` },
    });
    t.equal(limited.status, 429);
    t.match(await limited.json(), { error: { code: 'rate_limited' } });
  },
);

t.test('vercel twin: missing and unknown tokens fail as Vercel fails them', async (t) => {
  const { host } = await tempHost(t);
  const entry = (await host.start('sb', ['vercel'], { adminToken: 'admin', seeds: { vercel: seed } }))
    .vercel!;
  const bogus = vercelClient(entry.env_vars, 'AbCdEfGhIjKlMnOpQrStUvWx');
  await t.rejects(bogus.projects.createProject({ slug: 'acme', requestBody: { name: 'nope' } }), /403/);
  const unknown = await fetch(`${entry.base_url}/v2/user`, {
    headers: { authorization: 'Bearer not-a-token' },
  });
  t.equal(unknown.status, 403);
  t.same(await unknown.json(), {
    error: { code: 'forbidden', message: 'Not authorized', invalidToken: true },
  });
  const anonymous = await fetch(`${entry.base_url}/v10/projects`);
  t.equal(anonymous.status, 403);
  t.match(await anonymous.json(), { error: { code: 'forbidden', missingToken: true } });
  const projects = await vercelClient(entry.env_vars).projects.getProjects({ slug: 'acme' });
  t.same(
    ('projects' in projects ? projects.projects : []).map((p) => p.name),
    ['web'],
    'nothing was created',
  );
  const unknownRoute = await fetch(`${entry.base_url}/v99/nope`, {
    headers: { authorization: `Bearer ${entry.env_vars.VERCEL_TOKEN}` },
  });
  t.equal(unknownRoute.status, 404);
  t.match(await unknownRoute.json(), { error: { code: 'not_found' } });
});

t.test('vercel twin: state survives a restart; reset returns to the seed; POST /seed adds', async (t) => {
  const dataDir = await tempDir(t);
  const first = new TwinHost({ factories: twinFactories, dataDir, publicHost: '127.0.0.1' });
  const before = (await first.start('sb', ['vercel'], { adminToken: 'admin', seeds: { vercel: seed } }))
    .vercel!;
  const kept = await vercelClient(before.env_vars).projects.createProject({
    slug: 'acme',
    requestBody: { name: 'kept' },
  });
  await first.close();

  const second = new TwinHost({ factories: twinFactories, dataDir, publicHost: '127.0.0.1' });
  t.teardown(() => second.close());
  await second.restore(['sb']);
  const after = second.get('sb')!.vercel!;
  t.equal(after.env_vars.VERCEL_TOKEN, before.env_vars.VERCEL_TOKEN, 'the token survives');
  const vercel = vercelClient(after.env_vars);
  t.equal((await vercel.projects.getProject({ idOrName: kept.id, slug: 'acme' })).name, 'kept');

  const admin = new TwinAdminClient(after.admin_url, 'admin');
  await admin.seed({ teams: [{ slug: 'labs' }], projects: [{ name: 'docs', team: 'labs' }] });
  const labs = await vercel.projects.getProjects({ slug: 'labs' });
  t.same(
    ('projects' in labs ? labs.projects : []).map((p) => p.name),
    ['docs'],
  );
  await admin.reset();
  const acme = await vercel.projects.getProjects({ slug: 'acme' });
  t.same(
    ('projects' in acme ? acme.projects : []).map((p) => p.name),
    ['web'],
    'reset: only the start seed',
  );
  t.same(
    (await vercel.teams.getTeams({})).teams.map((team) => (team as { slug: string }).slug),
    ['acme'],
  );
  await t.rejects(admin.seed({ projects: [{ name: 'Not A Name' }] }), /vercel seed: "projects\[0\]\.name"/);
  await t.rejects(admin.seed({ projects: [{ name: 'x', team: 'ghost' }] }), /names team "ghost"/);
});

t.test('vercel twin: its presets seed what they promise', async (t) => {
  const presets = PRESETS.filter((p) => p.twins.includes('vercel'));
  t.ok(presets.length >= 1, 'at least one preset uses vercel');
  for (const preset of presets) {
    const { host } = await tempHost(t);
    const entry = (
      await host.start(preset.id, ['vercel'], { adminToken: 'admin', seeds: { vercel: preset.seed.vercel } })
    ).vercel!;
    t.same(await countsFor('vercel', entry, preset.seed.vercel), preset.promises.vercel, preset.id);
  }
});
