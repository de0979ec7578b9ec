/**
 * `npm run demo`: a whole deploy on this machine, no internet and no GitHub account needed. It starts a
 * GitHub twin holding examples/zero-dep as octocat/zero-dep, a Twinbox that fetches source from that
 * twin, and asks it over HTTP for a sandbox with the github and stripe twins. It prints the app URL (a
 * page showing data from the twins) and keeps everything running until Ctrl-C. `--once` stops at ready.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../server/config.ts';
import { unmountUnder } from '../server/deploy/confinement/leftovers.ts';
import { createTwinbox, type Twinbox } from '../server/twinbox.ts';
import { startGitHubTwin, type StandaloneGitHubTwin } from './github-twin.ts';
import { exampleFiles } from './files.ts';

const once = process.argv.includes('--once');
const dataDir = await mkdtemp(join(tmpdir(), 'twinbox-demo-'));
let github: StandaloneGitHubTwin | undefined;
let twinbox: Twinbox | undefined;

// Ctrl-C reaches npm and this process together, and npm relays it again: the stop runs once, and only
// after the start it interrupts has settled, so nothing the start makes is missed. Everything of the demo
// goes: the sandbox's processes, namespaces and cgroups (Twinbox's stop), then the data directory, after
// whatever is still mounted in it (a ready sandbox's stop keeps its workspace for a resume that never comes).
let starting: Promise<unknown> = Promise.resolve();
let stopping: Promise<void> | undefined;
const stop = (code: number) =>
  (stopping ??= (async () => {
    await starting.catch(() => {});
    try {
      await twinbox?.stop();
      await github?.close();
    } finally {
      await unmountUnder(dataDir);
      await rm(dataDir, { recursive: true, force: true, maxRetries: 3 });
    }
    process.exit(code);
  })());
process.on('SIGINT', () => void stop(0));
process.on('SIGTERM', () => void stop(0));

starting = (async () => {
  github = await startGitHubTwin({ seed: { users: [{ login: 'octocat', name: 'The Octocat' }] } });
  await github.createRepo({ owner: 'octocat', name: 'zero-dep', files: await exampleFiles('zero-dep') });
  twinbox = await createTwinbox(
    loadConfig({
      ...process.env,
      PORT: process.env.PORT ?? '0',
      TWINBOX_DATA_DIR: dataDir,
      LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
      // The twin plays GitHub: Twinbox resolves branches and downloads tarballs from it.
      GITHUB_API_URL: github.baseUrl,
      GITHUB_OAUTH_URL: github.baseUrl,
      GITHUB_TOKEN: github.token,
    }),
  );
  await twinbox.server.start();
})();
try {
  await starting;
} catch (error) {
  console.error(`The demo could not start: ${(error as Error).message}`);
  await stop(1);
}
if (!github || !twinbox) throw new Error('unreachable: the start settled without a Twinbox');
const api = `http://127.0.0.1:${twinbox.server.info.port}`;
const owner = await twinbox.accounts.create('demo@twinbox.local', 'pro');
const { key } = await twinbox.apiKeys.issue(owner.id, 'demo');
const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
// The key goes to a file (0600), never to the terminal or a log.
const keyFile = join(dataDir, 'demo-api-key');
await writeFile(keyFile, `${key}\n`, { mode: 0o600 });

console.log(`Twinbox (demo) listening on ${api}, GitHub twin at ${github.baseUrl}`);
const created = await fetch(`${api}/sandboxes`, {
  method: 'POST',
  headers,
  body: JSON.stringify({
    repo: 'octocat/zero-dep',
    branch: 'main',
    twins: ['github', 'stripe'],
    scenario_prompt: '3 customers, one whose card declines',
  }),
});
let sandbox = (await created.json()) as Record<string, any>;
console.log(`POST /sandboxes -> ${created.status} ${sandbox.status} (${sandbox.sandbox_id})`);
const deadline = Date.now() + 60_000;
while ((sandbox.status === 'queued' || sandbox.status === 'building') && Date.now() < deadline) {
  await new Promise((resolve) => setTimeout(resolve, 200));
  sandbox = (await (await fetch(`${api}/sandboxes/${sandbox.sandbox_id}`, { headers })).json()) as Record<
    string,
    any
  >;
}
if (sandbox.status !== 'ready') {
  console.error(`The sandbox ended ${sandbox.status}: ${sandbox.error ?? 'no error text'}`);
  await stop(1);
}
console.log(`\nready: the app is at ${sandbox.app_url}`);
for (const [name, twin] of Object.entries(sandbox.twins as Record<string, { base_url: string }>)) {
  console.log(`  twin ${name}: ${twin.base_url}`);
}
console.log(
  `\nTry:\n  curl ${sandbox.app_url}/data.json\n  curl -H "Authorization: Bearer $(cat ${keyFile})" ${api}/sandboxes/${sandbox.sandbox_id}`,
);
if (once) await stop(0);
console.log('\nCtrl-C stops the demo and removes its data.');
