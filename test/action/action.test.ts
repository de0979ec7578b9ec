import t from 'tap';
import { readFile } from 'node:fs/promises';
import { parse } from 'yaml';
import { INPUT_DEFAULTS } from '../../action/inputs.ts';
import { REPO_ROOT } from '../helpers/process.ts';
import { startLiveTwinbox } from '../client/helpers.ts';
import { masked, runAction } from './run-action.ts';

// The committed dist/index.js, run as a child process against a live Twinbox. For the `ready`
// outcome Twinbox gets a scripted deployer (test/client/helpers.ts) in place of the deploy engine:
// what is under test is the Action (inputs, waiting, outputs, masking, summary), not deploying.

// The tests below are independent (a Twinbox and a run of the bundle each) and mostly wait on child
// processes and on the scripted deploy: two run at once.
t.jobs = 2;

t.test('push event: creates, waits with progress, outputs, masks and summarizes', async (t) => {
  const { baseUrl, user, tb } = await startLiveTwinbox(t);
  const run = await runAction(t, {
    'api-key': user.key,
    'api-url': baseUrl,
    twins: 'github,\nstripe',
    'ttl-minutes': '30',
    env: 'FEATURE_FLAG=on\n\n# a comment\nSTRIPE_TOKEN=sk_test_override_value\nWITH_EQUALS=a=b',
    'timeout-minutes': '1',
  });
  t.equal(run.code, 0, 'the step succeeds');
  if (run.code !== 0) t.comment(run.stdout + run.stderr);
  const { outputs } = run;
  t.equal(outputs.status, 'ready');
  const sandbox = await tb.store.sandboxes.get(outputs['sandbox-id']!);
  t.ok(sandbox, 'sandbox-id is the id of the created sandbox');
  t.equal(sandbox!.branch, 'main', 'the branch comes from GITHUB_REF_NAME on push');
  t.equal(sandbox!.repo, 'acme/shop', 'the repo comes from GITHUB_REPOSITORY');
  t.equal(sandbox!.ttl_minutes, 30);
  t.equal(outputs['app-url'], `http://127.0.0.1:40999/${sandbox!.id}`);
  const twins = JSON.parse(outputs.twins!);
  t.same(Object.keys(twins).sort(), ['github', 'stripe']);
  t.equal(twins.github.base_url, 'http://127.0.0.1:41000');
  const envVars = JSON.parse(outputs['env-vars']!);
  t.equal(envVars.STRIPE_TOKEN, 'sk_test_override_value', 'the caller env overrides a twin variable');
  t.equal(envVars.WITH_EQUALS, 'a=b');
  t.equal(envVars.FEATURE_FLAG, 'on');

  const masks = masked(run);
  t.ok(masks.includes(user.key), 'the API key is masked');
  t.ok(masks.includes(sandbox!.twin_admin_token), 'the twin admin token is masked');
  for (const value of Object.values(envVars) as string[])
    t.ok(masks.includes(value), `env value ${value} masked`);
  t.ok(masks.indexOf(user.key) === 0, 'the key is masked before anything else is printed');
  t.notMatch(run.stdout.replace(/^::add-mask::.*$/gm, ''), user.key, 'the key is never printed');

  t.match(run.stdout, /Waiting up to 1m for it to be ready/);
  t.match(run.stdout, /: (queued|building)/, 'progress while waiting');
  t.match(run.stdout, new RegExp(`Ready: http://127.0.0.1:40999/${sandbox!.id}`));

  t.match(run.summary, /Twinbox sandbox ready/);
  t.match(run.summary, new RegExp(`<a href="http://127.0.0.1:40999/${sandbox!.id}">`));
  t.match(run.summary, /<td>github<\/td><td>http:\/\/127\.0\.0\.1:41000<\/td>/);
  t.match(run.summary, /<td>stripe<\/td><td>http:\/\/127\.0\.0\.1:41001<\/td>/);
  t.match(run.summary, new RegExp(`Expires: ${sandbox!.expires_at}`));
  t.notMatch(run.summary, sandbox!.twin_admin_token, 'no secrets in the summary');
  t.notMatch(run.summary, 'sk_test_override_value');
});

t.test('pull_request event: deploys the PR; wait false returns queued', async (t) => {
  const { baseUrl, user } = await startLiveTwinbox(t, {}, false);
  const prUrl = 'https://github.com/acme/shop/pull/7';
  const run = await runAction(
    t,
    { 'api-key': user.key, 'api-url': baseUrl, wait: 'false' },
    {
      env: { GITHUB_EVENT_NAME: 'pull_request', GITHUB_REF_NAME: '7/merge', GITHUB_HEAD_REF: 'feature' },
      event: { pull_request: { html_url: prUrl, head: { ref: 'feature' } } },
    },
  );
  t.equal(run.code, 0, 'the step succeeds');
  t.equal(run.outputs.status, 'queued');
  t.equal(run.outputs['app-url'], '');
  t.equal(run.outputs.twins, '{}');
  t.match(run.stdout, `Creating a sandbox of acme/shop (${prUrl})`);
  t.match(run.summary, /Twinbox sandbox queued/);
  t.match(run.summary, /not deployed yet/);
});

t.test('a bad API key fails the step naming the api-key input', async (t) => {
  const { baseUrl } = await startLiveTwinbox(t, {}, false);
  const run = await runAction(t, { 'api-key': 'twinbox_sk_notarealkey', 'api-url': baseUrl });
  t.equal(run.code, 1);
  t.match(
    run.stdout,
    /^::error::Twinbox \(http:\/\/127\.0\.0\.1:\d+\) answered 401: .+Check the `api-key` input/m,
  );
  t.equal(run.outputs['sandbox-id'], undefined);
});

t.test('a 400 fails the step with the API detail and the input to fix', async (t) => {
  const { baseUrl, user } = await startLiveTwinbox(t, {}, false);
  const run = await runAction(t, { 'api-key': user.key, 'api-url': baseUrl, twins: 'github, nosuchtwin' });
  t.equal(run.code, 1);
  t.match(run.stdout, /^::error::Twinbox .* answered 400: .*nosuchtwin.* Fix the `twins` input\.$/m);
});

t.test('a timeout fails the step, still reporting the sandbox', async (t) => {
  // No deployer: the sandbox stays queued, as it would behind a long build queue.
  const { baseUrl, user } = await startLiveTwinbox(t, {}, false);
  const started = Date.now();
  const run = await runAction(t, { 'api-key': user.key, 'api-url': baseUrl, 'timeout-minutes': '0.03' });
  t.equal(run.code, 1);
  t.ok(Date.now() - started < 15_000);
  const id = run.outputs['sandbox-id'];
  t.ok(id, 'sandbox-id is set, so a cleanup step can delete it');
  t.equal(run.outputs.status, 'queued');
  t.match(
    run.stdout,
    new RegExp(
      `^::error::Sandbox ${id} was not ready after 2s \\(status: queued\\)\\. Raise \`timeout-minutes\``,
      'm',
    ),
  );
  t.match(run.summary, /Twinbox sandbox queued/);
});

t.test('a failed deploy fails the step with the sandbox error', async (t) => {
  const { baseUrl, user, deployer } = await startLiveTwinbox(t);
  deployer.delayMs = 100;
  deployer.failWith = 'npm run build exited with code 2';
  const run = await runAction(t, { 'api-key': user.key, 'api-url': baseUrl });
  t.equal(run.code, 1);
  t.equal(run.outputs.status, 'failed');
  t.match(
    run.stdout,
    /^::error::Sandbox \S+ failed: npm run build exited with code 2\. Read the sandbox logs/m,
  );
  t.match(run.summary, /Error: npm run build exited with code 2/);
});

t.test('input mistakes fail before any request, naming the input', async (t) => {
  const base = { 'api-key': 'twinbox_sk_x', 'api-url': 'http://127.0.0.1:1' };
  const env = await runAction(t, { ...base, env: 'GOOD=1\nSECRET_WITHOUT_EQUALS' });
  t.equal(env.code, 1);
  t.match(env.stdout, /^::error::Input `env`, line 2: expected KEY=VALUE/m);
  t.notMatch(env.stdout, /SECRET_WITHOUT_EQUALS/, 'a bad line is not echoed: it may be a secret');
  const key = await runAction(t, { 'api-url': 'http://127.0.0.1:1' });
  t.match(key.stdout, /^::error::Input `api-key` is required/m);
  // No hosted Twinbox exists to default to: a workflow without `api-url` is told to name its own.
  const noUrl = await runAction(t, { 'api-key': 'twinbox_sk_x' });
  t.equal(noUrl.code, 1);
  t.match(noUrl.stdout, /^::error::Input `api-url` is required: the base URL of your Twinbox/m);
  t.notMatch(noUrl.stdout + noUrl.stderr, /Could not reach|twinbox\.dev/, 'no request to any default host');
  const badUrl = await runAction(t, { 'api-key': 'twinbox_sk_x', 'api-url': 'twinbox.example.com' });
  t.match(badUrl.stdout, /^::error::Input `api-url` must be an http:\/\/ or https:\/\/ URL/m);
  const ttl = await runAction(t, { ...base, 'ttl-minutes': 'soon' });
  t.match(ttl.stdout, /^::error::Input `ttl-minutes` must be a whole number/m);
  const noRef = await runAction(t, base, { env: { GITHUB_REF_NAME: '' } });
  t.match(noRef.stdout, /^::error::No branch to deploy: set `branch` or `pr-url`/m);
  const down = await runAction(t, base);
  t.match(
    down.stdout,
    /^::error::Twinbox request failed: Could not reach Twinbox at http:\/\/127\.0\.0\.1:1/m,
  );
});

t.test('action.yml: node20, dist/index.js, and the same defaults as the code', async (t) => {
  const action = parse(await readFile(`${REPO_ROOT}action.yml`, 'utf8'));
  t.same(action.runs, {
    using: 'node20',
    main: 'dist/index.js',
    post: 'dist/index.js',
    'post-if': 'always()',
  });
  for (const [name, value] of Object.entries(INPUT_DEFAULTS))
    t.equal(action.inputs[name].default, value, name);
  t.same(Object.keys(action.outputs).sort(), [
    'app-url',
    'env-vars',
    'sandbox-id',
    'status',
    'twin-set-id',
    'twins',
  ]);
  t.ok(action.inputs['api-key'].required);
  t.equal(action.inputs['api-url'].required, true, 'api-url is required');
  t.notOk('default' in action.inputs['api-url'], 'api-url has no default host');
});
