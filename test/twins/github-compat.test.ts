import t from 'tap';
import { startGitHubTwin } from '../../examples/github-twin.ts';
import { githubClient } from './vendor-schema.ts';

const seed = {
  users: [{ login: 'octocat', name: 'The Octocat', email: 'octocat@example.com' }],
  repos: [{ owner: 'octocat', name: 'shop', files: { 'README.md': '# shop\n' } }],
};

t.test('github twin: GET / (meta/root) and Markdown through @octokit/rest', async (t) => {
  const gh = await startGitHubTwin({ seed });
  t.teardown(() => gh.close());
  // Every answer here is checked against GitHub's description (meta/root, markdown/render, render-raw).
  const octokit = githubClient({ auth: gh.token, baseUrl: gh.env.GITHUB_API_URL });
  const origin = new URL(gh.env.GITHUB_API_URL!).origin;

  const root = (await octokit.meta.root()).data;
  t.equal(root.current_user_url, `${origin}/user`);
  t.equal(root.repository_url, `${origin}/repos/{owner}/{repo}`);
  t.equal(root.user_search_url, `${origin}/search/users?q={query}{&page,per_page,sort,order}`);
  t.ok(
    Object.values(root).every((u) => typeof u === 'string' && u.startsWith(origin)),
    "every *_url is on the request's origin",
  );

  const rendered = await octokit.markdown.render({
    text: 'Hello <script>x</script> & you\n\nline one\nline two',
  });
  t.equal(rendered.status, 200);
  t.match(rendered.headers['content-type'], /^text\/html/);
  t.equal(
    rendered.data,
    '<p>Hello &lt;script&gt;x&lt;/script&gt; &amp; you</p>\n<p>line one\nline two</p>\n',
    'HTML escaped, paragraphs',
  );
  const gfm = await octokit.markdown.render({ text: 'a\nb', mode: 'gfm', context: 'octocat/shop' });
  t.equal(gfm.data, '<p>a<br>\nb</p>\n', 'gfm: a newline is a line break');
  const raw = await octokit.markdown.renderRaw({
    data: 'x <b>y</b>',
    headers: { 'content-type': 'text/plain' },
  });
  t.equal(raw.data, '<p>x &lt;b&gt;y&lt;/b&gt;</p>\n');

  const anonymous = githubClient({ baseUrl: gh.env.GITHUB_API_URL });
  t.equal(
    (await anonymous.markdown.render({ text: 'hi' })).data,
    '<p>hi</p>\n',
    'no token needed, as on GitHub',
  );

  const error = await octokit.request('POST /markdown', { mode: 'gfm' } as never).catch((e: unknown) => e);
  t.equal((error as { status?: number }).status, 422, 'no text is 422');
});

t.test('github twin: the older refs routes (git/refs, git/refs/{ref}) still answer', async (t) => {
  const gh = await startGitHubTwin({ seed });
  t.teardown(() => gh.close());
  const octokit = githubClient({ auth: gh.token, baseUrl: gh.env.GITHUB_API_URL });
  // These two routes left GitHub's OpenAPI description but still answer on api.github.com (octokit.rb's
  // `refs` and `ref` call them; https://docs.github.com/en/rest/git/refs documents their successors). Their
  // answers are checked by equality with the documented routes' answers, which vendorFetch checks.
  // The one exception to the description check, per call: plain fetch for routes it does not list.
  const legacy = (route: string, params: { owner: string; repo: string }) =>
    octokit.request(route, { ...params, request: { fetch: globalThis.fetch } });
  const repo = { owner: 'octocat', repo: 'shop' };
  const main = (await octokit.git.getRef({ ...repo, ref: 'heads/main' })).data;
  await octokit.git.createRef({ ...repo, ref: 'refs/heads/feature', sha: main.object.sha });
  await octokit.git.createRef({ ...repo, ref: 'refs/tags/v1', sha: main.object.sha });

  const heads = (await octokit.git.listMatchingRefs({ ...repo, ref: 'heads' })).data;
  const tags = (await octokit.git.listMatchingRefs({ ...repo, ref: 'tags' })).data;
  t.equal(heads.length, 2);
  const all = await legacy('GET /repos/{owner}/{repo}/git/refs', repo);
  t.equal(all.status, 200);
  t.same(
    all.data,
    [...heads, ...tags].sort((a, b) => a.ref.localeCompare(b.ref)),
    'every ref, as matching-refs answers them',
  );

  const single = await legacy('GET /repos/{owner}/{repo}/git/refs/heads/main', repo);
  t.same(single.data, main, 'the single-ref form answers the ref object, as git/ref does');
  const prefix = await legacy('GET /repos/{owner}/{repo}/git/refs/heads', repo);
  t.same(prefix.data, heads, 'a prefix answers the refs under it, as an array');
  const missing = await legacy('GET /repos/{owner}/{repo}/git/refs/heads/nope', repo).catch(
    (e: unknown) => e,
  );
  t.equal((missing as { status?: number }).status, 404);
  const hidden = await legacy('GET /repos/{owner}/{repo}/git/refs', {
    owner: 'octocat',
    repo: 'nothing',
  }).catch((e: unknown) => e);
  t.equal((hidden as { status?: number }).status, 404, 'an unknown repository is 404');
});
