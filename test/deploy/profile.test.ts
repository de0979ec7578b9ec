import t, { type Test } from 'tap';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { appsBelow, SEARCH_DEPTH, SEARCH_ENTRIES } from '../../server/deploy/steps/app-search.ts';
import { HealthCheckError, waitStaysUp } from '../../server/deploy/steps/health.ts';
import { appEnvironment } from '../../server/deploy/steps/pipeline.ts';
import { readProfile } from '../../server/deploy/steps/profile.ts';
import { noHttpPortProblem, problemAnswer } from '../../server/router/pages.ts';
import { tempDir } from '../helpers/twinbox.ts';

/** A repository checkout with these files. */
async function repo(t: Test, files: Record<string, string>): Promise<string> {
  const root = await tempDir(t);
  for (const [path, text] of Object.entries(files)) {
    await mkdir(join(root, path, '..'), { recursive: true });
    await writeFile(join(root, path), text);
  }
  return root;
}
const yml = (text: string) => ({ '.github/twinbox.yml': text });

t.test('port: false: an app with no HTTP port; what cannot go with it is refused', async (t) => {
  const worker = await readProfile(await repo(t, yml('port: false\nstart: node worker.js\n')));
  t.match(worker, { port: false, start: 'node worker.js', webhooks: {} });
  const quiet = await readProfile(
    await repo(t, yml('port: false\nstart: x\nwebhooks:\n  slack: false\n  stripe: null\n')),
  );
  t.same(quiet.webhooks, { slack: null, stripe: null }, 'saying "no deliveries" is fine');

  for (const [text, message] of [
    [
      'port: true\nstart: x\n',
      /"port" must be a port number \(1024-65535\), or false for an app with no HTTP port/,
    ],
    ['port: web\nstart: x\n', /"port" must be a port number/],
    ['port: false\nstart: x\nhealth_path: /h\n', /"health_path" cannot be used with port: false/],
    ['port: false\nstart: x\nport_variable: P\n', /"port_variable" cannot be used with port: false/],
    [
      'port: false\nstart: x\nwebhooks:\n  stripe: /hooks\n',
      /"webhooks.stripe" cannot be used with port: false \(the app has no HTTP port\): set it to false/,
    ],
  ] as const)
    await t.rejects(readProfile(await repo(t, yml(text))), { message }, text);
  // A port stays a port: paths for webhooks and the rest still work with one.
  t.match(await readProfile(await repo(t, yml('port: 4242\nstart: x\nwebhooks:\n  stripe: /w\n'))), {
    port: 4242,
    webhooks: { stripe: '/w' },
  });

  const url = 'http://0b1c.localhost:3000';
  const env = appEnvironment('/w', { STRIPE_SECRET_KEY: 'sk_test_x' }, worker, undefined, url);
  t.notOk('PORT' in env, 'no PORT: nothing would reach it there');
  t.match(env, { APP_URL: url, STRIPE_SECRET_KEY: 'sk_test_x', HOME: '/w' });
  t.equal(
    appEnvironment('/w', { PORT: '9' }, worker, undefined, url).PORT,
    '9',
    "the caller's own PORT stays",
  );
});

t.test(
  'waitStaysUp: ready once the process stayed up; its exit or a cancel first is the answer',
  async (t) => {
    const never = new Promise<string>(() => {});
    await t.resolves(waitStaysUp({ settleMs: 20, exited: never }), 'stayed up');

    const exit = waitStaysUp({ settleMs: 60_000, exited: Promise.resolve('the app exited with code 3') });
    const error = await exit.catch((e: unknown) => e);
    t.ok(error instanceof HealthCheckError);
    t.match(error, { kind: 'exited', reason: 'the app exited with code 3' });

    const controller = new AbortController();
    const cancelled = waitStaysUp({ settleMs: 60_000, exited: never, signal: controller.signal });
    controller.abort();
    t.match(await cancelled.catch((e: unknown) => e), { kind: 'cancelled' });
    const aborted = AbortSignal.abort();
    t.match(await waitStaysUp({ settleMs: 60_000, exited: never, signal: aborted }).catch((e) => e), {
      kind: 'cancelled',
    });
  },
);

t.test("the app URL of an app with no HTTP port: a page saying so, or Twinbox's problem body", async (t) => {
  const problem = noHttpPortProblem('s1', ['slack']);
  const page = problemAnswer(problem, true);
  t.equal(page.status, 404);
  t.match(page.headers['content-type'], /text\/html/);
  t.match(page.body, '<h1>This app has no HTTP port</h1>');
  t.match(page.body, 'port: false in .github/twinbox.yml');
  t.match(page.body, 'Its twins answer at their own URLs (slack)');
  const json = problemAnswer(problem, false);
  t.match(JSON.parse(json.body), {
    statusCode: 404,
    error: 'Not Found',
    code: 'app_has_no_http_port',
    detail: /The app of sandbox s1 is running, but it has no HTTP port/,
  });
});

t.test('no root: an app below the root is found and deployed as if root: named it', async (t) => {
  const start = (command = 'node server.js') => JSON.stringify({ scripts: { start: command } });
  // Laid out as Stripe's samples are: the README at the root, servers in several languages, a client.
  const stripeSample = await repo(t, {
    'README.md': '# Accept a payment',
    'client/html/index.html': '<form>',
    'server/node/package.json': start(),
    'server/node/server.js': '',
    'server/python/requirements.txt': 'stripe',
    'server/node/client/package.json': start('vite'),
  });
  const found = await readProfile(stripeSample);
  t.match(found, { root: 'server/node', source: 'node', start: 'node server.js', staticSite: false });
  t.match(found.notes, [
    /root has no app: deploying the one found below it, server\/node, as if .* said root: server\/node/,
  ]);

  // A twinbox.yml without root: or start: still lets detection look below the root.
  const configured = await readProfile(
    await repo(t, { ...yml('port: 4242\n'), 'app/Procfile': 'web: ./serve\n' }),
  );
  t.match(configured, { root: 'app', port: 4242, start: './serve', source: 'twinbox.yml+procfile' });

  // Installed dependencies, hidden folders, test data, links, libraries and deep folders are not apps.
  const noisy = await repo(t, {
    'README.md': 'x',
    'node_modules/express/package.json': start(),
    '.devcontainer/package.json': start(),
    'Test/fixtures/app/package.json': start(),
    'vendor/x/package.json': start(),
    'packages/lib/package.json': '{"main":"index.js"}',
    'broken/package.json': '{"scripts":',
    'a/b/c/d/package.json': start(),
    'web/package.json': start('next start'),
  });
  await symlink(join(stripeSample, 'server'), join(noisy, 'linked'));
  t.match(await readProfile(noisy), { root: 'web', start: 'next start' });

  const examples = {
    'README.md': 'x',
    'examples/express/package.json': start(),
    'examples/fastify/package.json': start(),
  };
  const several = await repo(t, examples);
  await t.rejects(readProfile(several), {
    message:
      'The repository\'s root has no app, and there are several below it: examples/express, examples/fastify. Say which to deploy with "root:" in .github/twinbox.yml, e.g. root: examples/express',
  });
  t.match(await readProfile(await repo(t, { ...examples, ...yml('root: examples/fastify\n') })), {
    root: 'examples/fastify',
  });

  // The root's own app wins, and so does a twinbox.yml that says how to start at the root.
  t.match(
    await readProfile(await repo(t, { 'package.json': start('node .'), 'web/package.json': start() })),
    {
      root: '',
      start: 'node .',
    },
  );
  t.match(await readProfile(await repo(t, { ...yml('start: make run\n'), 'web/package.json': start() })), {
    root: '',
    start: 'make run',
  });
  t.match(await readProfile(await repo(t, { 'index.html': 'x', 'api/package.json': start() })), {
    root: '',
    staticSite: true,
  });

  // A monorepo's root package.json, with no way to start, is not an app: the one app below it is.
  const monorepo = { 'package.json': '{"private":true,"workspaces":["apps/*","packages/*"]}' };
  t.match(
    await readProfile(
      await repo(t, {
        ...monorepo,
        'apps/web/package.json': start('next start'),
        'packages/ui/package.json': '{}',
      }),
    ),
    { root: 'apps/web', start: 'next start' },
  );
  await t.rejects(readProfile(await repo(t, monorepo)), {
    message: /No way to start the app: package.json has no "start" script/,
  });

  // Documents only: the README page, and the log says it is not an app.
  const docs = await readProfile(await repo(t, { 'README.md': 'x', 'packages/lib/package.json': '{}' }));
  t.match(docs, { root: '', source: 'static', staticSite: true });
  t.match(docs.notes, [/no app in the repository/, /serving the repository as documents/]);
  await t.rejects(readProfile(await repo(t, { 'notes.txt': 'x' })), { message: /No runtime profile/ });
});

t.test('the search below the root is bounded: a huge tree stops it, never hangs or overflows', async (t) => {
  const huge = await repo(t, { 'README.md': 'x' });
  await Promise.all(
    Array.from({ length: SEARCH_ENTRIES + 10 }, (_, i) => writeFile(join(huge, `f${i}`), '')),
  );
  const search = await appsBelow(huge);
  t.same(search, { apps: [], truncated: true });
  const docs = await readProfile(huge);
  t.match(docs.notes, [/the search stopped early: the repository has too many files/]);
  t.equal(SEARCH_DEPTH, 3);
});
