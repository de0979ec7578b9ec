import t from 'tap';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import {
  checkResponse,
  findOperation,
  schemaFailureOf,
  toJsonSchema,
  vendorFetch,
  VendorSchemaError,
} from './vendor-schema.ts';
import {
  SHARED_VENDOR_SCHEMA_TWINS,
  sharedVendorSchemasRoot,
  vendorSchemaDir,
  vendorSchemaFile,
  VendorSchemaMissingError,
} from './vendor-schema-dir.ts';

/** A GitHub user as the description's simple-user requires it. */
const user = (login: string) => ({
  login,
  id: 1,
  node_id: 'MDQ6VXNlcjE=',
  avatar_url: 'https://avatars.example/u/1',
  gravatar_id: '',
  url: `https://api.example/users/${login}`,
  html_url: `https://example/${login}`,
  followers_url: `https://api.example/users/${login}/followers`,
  following_url: `https://api.example/users/${login}/following{/other_user}`,
  gists_url: `https://api.example/users/${login}/gists{/gist_id}`,
  starred_url: `https://api.example/users/${login}/starred{/owner}{/repo}`,
  subscriptions_url: `https://api.example/users/${login}/subscriptions`,
  organizations_url: `https://api.example/users/${login}/orgs`,
  repos_url: `https://api.example/users/${login}/repos`,
  events_url: `https://api.example/users/${login}/events{/privacy}`,
  received_events_url: `https://api.example/users/${login}/received_events`,
  type: 'User',
  site_admin: false,
});

const label = {
  id: 1,
  node_id: 'LA_1',
  url: 'https://api.example/repos/o/r/labels/bug',
  name: 'bug',
  description: null,
  color: 'd73a4a',
  default: true,
};

t.test(
  'operations are found by template, by concrete path, and by a last parameter holding slashes',
  async (t) => {
    t.equal(
      findOperation('github', 'PUT', '/repos/o/r/pulls/3/merge'),
      'PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge',
    );
    t.equal(findOperation('github', 'get', '/repos/{owner}/{repo}'), 'GET /repos/{owner}/{repo}');
    t.equal(findOperation('github', 'GET', '/repos/o/r?per_page=1'), 'GET /repos/{owner}/{repo}');
    t.equal(
      findOperation('github', 'GET', '/repos/o/r/contents/docs/readme.md'),
      'GET /repos/{owner}/{repo}/contents/{path}',
    );
    t.equal(
      findOperation('github', 'GET', '/repos/o/r/git/ref/heads/main'),
      'GET /repos/{owner}/{repo}/git/ref/{ref}',
    );
    t.equal(
      findOperation('github', 'GET', '/repos/o/r/issues/comments'),
      'GET /repos/{owner}/{repo}/issues/comments',
      'a literal segment wins over a parameter',
    );
    t.equal(findOperation('github', 'DELETE', '/user'), undefined, 'the method counts');
    t.equal(
      findOperation('slack', 'POST', '/api/chat.postMessage'),
      '/chat.postMessage',
      'Slack: any method, under /api',
    );
    t.equal(findOperation('slack', 'GET', '/api/conversations.history'), '/conversations.history');
  },
);

t.test('a response with a missing required field or a wrong type is invalid', async (t) => {
  const ok = checkResponse('github', {
    method: 'GET',
    path: '/repos/o/r/labels/bug',
    status: 200,
    body: label,
  });
  t.same(ok.errors, []);
  t.equal(ok.valid, true);
  t.equal(ok.success, true);

  const { color: _color, ...noColor } = label;
  const missing = checkResponse('github', {
    method: 'GET',
    path: '/repos/o/r/labels/bug',
    status: 200,
    body: noColor,
  });
  t.equal(missing.valid, false);
  t.match(missing.errors.join('\n'), /required property 'color'/);

  const wrongType = checkResponse('github', {
    method: 'GET',
    path: '/repos/o/r/labels/bug',
    status: 200,
    body: { ...label, id: '1' },
  });
  t.equal(wrongType.valid, false);
  t.match(wrongType.errors.join('\n'), /\/id must be integer/);

  const listOk = checkResponse('github', {
    method: 'GET',
    path: '/repos/o/r/labels',
    status: 200,
    body: [label],
  });
  t.equal(listOk.valid, true);
  const listBad = checkResponse('github', {
    method: 'GET',
    path: '/repos/o/r/labels',
    status: 200,
    body: [{ ...label, default: 'yes' }],
  });
  t.match(listBad.errors.join('\n'), /\/0\/default must be boolean/);

  const empty = checkResponse('github', {
    method: 'GET',
    path: '/repos/o/r/labels/bug',
    status: 200,
    body: undefined,
  });
  t.equal(empty.valid, false, 'an empty body where one is documented');
});

t.test("OpenAPI 3.0's nullable is honoured, and only where the vendor wrote it", async (t) => {
  t.same(toJsonSchema({ type: 'string', nullable: true }), { type: ['string', 'null'] });
  t.same(toJsonSchema({ type: 'string', enum: ['a'], nullable: true }), {
    type: ['string', 'null'],
    enum: ['a', null],
  });
  t.same(toJsonSchema({ allOf: [{ $ref: '#/x' }], nullable: true }), {
    anyOf: [{ allOf: [{ $ref: '#/x' }] }, { type: 'null' }],
  });
  t.same(toJsonSchema({ properties: { nullable: { type: 'boolean' } } }), {
    properties: { nullable: { type: 'boolean' } },
  });

  // label.description is `type: string, nullable: true`; label.name is not nullable.
  t.equal(
    checkResponse('github', {
      method: 'GET',
      path: '/repos/o/r/labels/x',
      status: 200,
      body: { ...label, description: null },
    }).valid,
    true,
  );
  t.equal(
    checkResponse('github', {
      method: 'GET',
      path: '/repos/o/r/labels/x',
      status: 200,
      body: { ...label, name: null },
    }).valid,
    false,
  );
  const wrong = checkResponse('github', {
    method: 'GET',
    path: '/repos/o/r/labels/x',
    status: 200,
    body: { ...label, description: 5 },
  });
  t.match(
    wrong.errors.join('\n'),
    /\/description must be string,null/,
    'null or the declared type, nothing else',
  );
});

t.test('statuses: documented ones, GitHub errors at other statuses, undocumented successes', async (t) => {
  const notFound = { message: 'Not Found', documentation_url: 'https://docs.github.com/rest' };
  t.equal(
    checkResponse('github', { method: 'GET', path: '/repos/o/r', status: 404, body: notFound }).valid,
    true,
  );
  t.equal(
    checkResponse('github', { method: 'GET', path: '/repos/o/r', status: 404, body: { message: 404 } }).valid,
    false,
  );
  const bad = {
    message: 'Bad credentials',
    documentation_url: 'https://docs.github.com/rest',
    status: '401',
  };
  const undocumented = checkResponse('github', {
    method: 'GET',
    path: '/repos/o/r/labels',
    status: 401,
    body: bad,
  });
  t.equal(
    undocumented.valid,
    true,
    "an error status the operation does not list is checked against GitHub's basic-error",
  );
  t.equal(
    checkResponse('github', {
      method: 'GET',
      path: '/repos/o/r/labels',
      status: 401,
      body: { ...bad, status: 401 },
    }).valid,
    false,
    'basic-error.status is a string',
  );
  const weird = checkResponse('github', { method: 'GET', path: '/repos/o/r/labels', status: 206, body: [] });
  t.equal(weird.valid, false);
  t.match(weird.errors[0], /status 206 is not documented/);
  t.equal(
    checkResponse('github', {
      method: 'PUT',
      path: '/repos/o/r/pulls/1/merge',
      status: 405,
      body: { message: 'Pull Request is not mergeable', documentation_url: 'x' },
    }).valid,
    true,
  );
});

t.test(
  'Slack: errors are the default response (HTTP 200, ok: false); additionalProperties are refused',
  async (t) => {
    const error = checkResponse('slack', {
      method: 'POST',
      path: '/api/auth.test',
      status: 200,
      body: { ok: false, error: 'invalid_auth' },
    });
    t.equal(error.valid, true);
    t.equal(error.success, false, 'ok: false is not a success');
    t.equal(
      checkResponse('slack', { method: 'POST', path: '/api/auth.test', status: 200, body: { ok: false } })
        .valid,
      false,
    );
    const auth = {
      ok: true,
      url: 'https://acme.slack.com/',
      team: 'Acme',
      user: 'bot',
      team_id: 'T0001',
      user_id: 'U0001',
    };
    t.equal(
      checkResponse('slack', { method: 'POST', path: '/api/auth.test', status: 200, body: auth }).valid,
      true,
    );
    const extra = checkResponse('slack', {
      method: 'POST',
      path: '/api/auth.test',
      status: 200,
      body: { ...auth, surprise: 1 },
    });
    t.equal(extra.valid, false);
    t.match(extra.errors[0], /has "surprise"/);
    t.equal(
      checkResponse('slack', {
        method: 'POST',
        path: '/api/auth.test',
        status: 200,
        body: { ...auth, team_id: 'acme' },
      }).valid,
      false,
      'patterns are enforced',
    );
  },
);

t.test('an unknown operation fails; paths outside the API are counted as unchecked', async (t) => {
  const unknown = checkResponse('github', { method: 'GET', path: '/no/such/thing', status: 200, body: {} });
  t.equal(unknown.valid, false);
  t.match(unknown.errors[0], /not an operation of the vendored GitHub description/);
  t.equal(
    checkResponse('slack', { method: 'POST', path: '/api/bogus.method', status: 200, body: { ok: true } })
      .valid,
    false,
  );
  const web = checkResponse('github', {
    method: 'POST',
    path: '/login/oauth/access_token',
    status: 200,
    body: {},
  });
  t.equal(web.valid, true);
  t.equal(web.unchecked, true);
  t.throws(
    () => checkResponse('nosuchtwin', { method: 'GET', path: '/', status: 200, body: {} }),
    VendorSchemaMissingError,
  );
});

t.test(
  'vendorFetch rejects the call on an invalid response and passes valid ones through untouched',
  async (t) => {
    let answer: { status: number; body: unknown } = { status: 200, body: label };
    const server = createServer((_req, res) => {
      res.writeHead(answer.status, { 'content-type': 'application/json; charset=utf-8' });
      res.end(JSON.stringify(answer.body));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const { port } = server.address() as { port: number };
    const checked = vendorFetch('github');
    const response = await checked(`http://127.0.0.1:${port}/repos/o/r/labels/bug`);
    t.same(await response.json(), label, 'the caller still reads the whole body');

    answer = { status: 200, body: { ...label, color: 7 } };
    const error = await checked(`http://127.0.0.1:${port}/repos/o/r/labels/bug`).catch((e: unknown) => e);
    t.type(error, VendorSchemaError);
    t.match((error as Error).message, /GET \/repos\/\{owner\}\/\{repo\}\/labels\/\{name\} → 200/);
    t.equal(schemaFailureOf({ cause: { original: error } }), error, 'found inside SDK errors');
  },
);

t.test('the twin tests build their SDK clients through the checked ones', async (t) => {
  // Every Octokit and WebClient in test/twins/*.test.ts must come from githubClient/slackClient, so that
  // every response they get is checked; a direct `new Octokit(` would slip past the check.
  const dir = new URL('./', import.meta.url);
  for (const file of readdirSync(dir).filter(
    (f) => f.endsWith('.test.ts') && f !== 'vendor-schema.test.ts',
  )) {
    const source = readFileSync(new URL(file, dir), 'utf8');
    t.notMatch(
      source,
      /new (Octokit|WebClient)\(/,
      `${file} builds its SDK clients with githubClient/slackClient`,
    );
  }
});

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

t.test(
  "the descriptions taken from vendors' repositories are read from ../shared, and all are there",
  async (t) => {
    t.equal(
      sharedVendorSchemasRoot({}),
      join(repoRoot, '..', 'shared', 'vendor-schemas'),
      'beside the checkout by default',
    );
    t.equal(
      sharedVendorSchemasRoot({ TWINBOX_VENDOR_SCHEMAS_DIR: '/srv/schemas' }),
      '/srv/schemas',
      'or overridden',
    );
    // The files each schema check reads: none may be missing, or that twin's answers would go unchecked.
    const files: Record<string, string[]> = { aws: ['s3.json', 'sts.json'], linear: ['schema.graphql'] };
    let checked = 0;
    for (const twin of SHARED_VENDOR_SCHEMA_TWINS) {
      t.equal(
        vendorSchemaDir(twin),
        `${join(sharedVendorSchemasRoot(), twin)}/`,
        `${twin}: read from shared`,
      );
      for (const file of ['source.json', ...(files[twin] ?? ['openapi.json'])]) {
        t.ok(statSync(vendorSchemaFile(twin, file)).size > 0, `${twin}: ${file}`);
        checked++;
      }
    }
    t.equal(checked, 21, 'every file of the ten twins was looked at');
    for (const twin of ['apple', 'github', 'stripe', 'vercel'])
      t.equal(
        vendorSchemaDir(twin),
        `${repoRoot}server/twins/vendors/${twin}/vendor-schema/`,
        `${twin}: committed`,
      );
  },
);

t.test('a missing description fails the check, naming its path, in CI and elsewhere', async (t) => {
  const empty = mkdtempSync(join(tmpdir(), 'twinbox-vendor-schemas-'));
  t.teardown(() => rmSync(empty, { recursive: true, force: true }));
  for (const CI of ['true', '']) {
    const env = { CI, TWINBOX_VENDOR_SCHEMAS_DIR: empty };
    const error = (() => {
      try {
        return vendorSchemaFile('slack', 'openapi.json', env);
      } catch (e) {
        return e;
      }
    })();
    t.type(error, VendorSchemaMissingError, `CI=${CI || '(unset)'}: it throws`);
    t.equal((error as VendorSchemaMissingError).path, join(empty, 'slack', 'openapi.json'));
    t.match((error as Error).message, join(empty, 'slack', 'openapi.json'));
    t.match((error as Error).message, /TWINBOX_VENDOR_SCHEMAS_DIR/);
  }
  // Through the check itself: a twin whose description is missing fails its first check (not loaded yet here).
  const saved = process.env.TWINBOX_VENDOR_SCHEMAS_DIR;
  process.env.TWINBOX_VENDOR_SCHEMAS_DIR = empty;
  t.teardown(() => {
    if (saved === undefined) delete process.env.TWINBOX_VENDOR_SCHEMAS_DIR;
    else process.env.TWINBOX_VENDOR_SCHEMAS_DIR = saved;
  });
  t.throws(
    () => checkResponse('mongoatlas', { method: 'GET', path: '/api/atlas/v2/groups', status: 200, body: {} }),
    VendorSchemaMissingError,
  );
});

t.test('no committed file is one of the descriptions taken from a fetched repository', async (t) => {
  // The acceptance of issue 20: byte for byte, no file of ../shared/vendor-schemas is in the repository,
  // but for Google's OAuth shapes, which the project wrote by hand from Google's pages.
  const own = new Set(['google/oauth.json']);
  const shared = new Map<string, string>();
  const root = sharedVendorSchemasRoot();
  const sha = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');
  for (const twin of readdirSync(root, { withFileTypes: true }).filter((d) => d.isDirectory()))
    for (const file of readdirSync(join(root, twin.name))) {
      const name = `${twin.name}/${file}`;
      if (!own.has(name)) shared.set(sha(join(root, name)), name);
    }
  t.ok(shared.size >= 20, `${shared.size} files in ${root}`);
  const { stdout } = await promisify(execFile)('git', ['ls-files', '-z'], {
    cwd: repoRoot,
    maxBuffer: 64 * 1024 * 1024,
  });
  const committed = stdout.split('\0').filter(Boolean);
  t.ok(committed.length > 100, `${committed.length} committed files`);
  const found = committed.flatMap((file) => {
    const path = join(repoRoot, file);
    let hash: string;
    try {
      hash = sha(path);
    } catch {
      return []; // deleted in the work tree
    }
    const match = shared.get(hash);
    return match ? [`${relative(repoRoot, path)} is ../shared/vendor-schemas/${match}`] : [];
  });
  t.same(found, []);
});
