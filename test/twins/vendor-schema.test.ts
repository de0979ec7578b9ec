import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import {
  checkResponse,
  findOperation,
  schemaFailureOf,
  toJsonSchema,
  vendorFetch,
  VendorSchemaError,
} from './vendor-schema.ts';

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
    /no vendored description/,
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
