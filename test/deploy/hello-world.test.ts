import t from 'tap';
import { readFile } from 'node:fs/promises';
import { sampleCurl } from '../../server/bootstrap.ts';
import { call, createUser } from '../helpers/twinbox.ts';
import { deployingTwinbox, deploySandbox, githubToDeployFrom } from '../helpers/deploy.ts';

/** The JSON body of a printed curl (`-d '{...}'`). */
function bodyOf(curl: string): Record<string, unknown> {
  const data = /-d '(\{[^']*\})'/.exec(curl)?.[1];
  if (!data) throw new Error(`no -d '...' in:\n${curl}`);
  return JSON.parse(data) as Record<string, unknown>;
}

t.test('the first example (npm start, README) deploys a README-only repository to ready', async (t) => {
  const printed = bodyOf(sampleCurl('http://127.0.0.1:3000', '.twinbox/dev-api-key'));
  const readme = await readFile(new URL('../../README.md', import.meta.url), 'utf8');
  t.same(bodyOf(readme), printed, "the README's curl is the one npm start prints");
  t.match(printed, { repo: 'octocat/Hello-World', branch: 'master' });

  // A repository exactly like GitHub's octocat/Hello-World: one file, README, on branch master.
  const gh = await githubToDeployFrom(t);
  await gh.createRepo({
    owner: 'octocat',
    name: 'Hello-World',
    default_branch: 'master',
    // The twin starts every repository with a README.md; GitHub's has only README.
    files: { README: 'Hello World!\n', 'README.md': null },
  });
  const tb = await deployingTwinbox(t, gh);
  const user = await createUser(tb);
  const sandbox = await deploySandbox(tb, user, printed);
  const logs = await call(tb, { url: `/sandboxes/${sandbox.sandbox_id}/logs`, token: user.key });
  t.equal(sandbox.status, 'ready', `${sandbox.error ?? ''}\n${logs.body}`);
  t.match(logs.body, /source: 1 files/, 'README, nothing else');
  t.match(logs.body, /profile \(static\): install=- build=- start=node \.twinbox\/static-server\.mjs/);

  const page = await fetch(sandbox.app_url);
  t.equal(page.status, 200);
  t.match(page.headers.get('content-type'), /^text\/html/);
  const html = await page.text();
  t.match(html, '<pre>Hello World!\n</pre>', 'the index shows the README');
  t.match(html, '<ul>\n<li><a href="README">README</a></li>\n</ul>', 'and lists the one file');
  t.notMatch(html, '.twinbox', "Twinbox's own server script is not listed");

  const file = await fetch(`${sandbox.app_url}/README`);
  t.equal(file.status, 200);
  t.match(file.headers.get('content-type'), /^text\/plain/, 'a README without extension reads as text');
  t.equal(await file.text(), 'Hello World!\n');
  t.equal((await fetch(`${sandbox.app_url}/.twinbox/static-server.mjs`)).status, 404);
  t.equal((await fetch(`${sandbox.app_url}/%E0%A4%A`)).status, 400, 'a malformed path is refused');
  t.equal((await fetch(`${sandbox.app_url}/`)).status, 200, '...and the site is still up');
});
