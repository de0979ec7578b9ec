import t, { type Test } from 'tap';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
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
