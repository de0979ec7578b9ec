import t from 'tap';
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { build } from 'esbuild';
import { REPO_ROOT } from '../helpers/process.ts';

/**
 * Twinbox's router imports the undici package, which takes over the process's global fetch dispatcher
 * when nothing set one first; Node 20's own fetch then failed every request with a Content-Length header
 * (the Stripe SDK's POSTs in a process running Twinbox). server/router/undici-package.ts keeps Node's
 * own. Each case runs in a fresh process, whose globals nothing else touched first.
 */

const PROBE = `
import http from 'node:http';
const srv = http.createServer((q, s) => { let b = ''; q.on('data', (c) => (b += c)); q.on('end', () => s.end('got ' + b)); });
await new Promise((r) => srv.listen(0, '127.0.0.1', r));
const loaded = await import(process.env.MODULE);
// undici-package.ts loads the package on its first call.
if (process.env.CALL) loaded[process.env.CALL]();
const url = 'http://127.0.0.1:' + srv.address().port + '/';
const answer = await fetch(url, { method: 'POST', body: 'hello', headers: { 'Content-Length': '5' } })
  .then((r) => r.text())
  .catch((e) => 'failed: ' + (e.cause?.message ?? e.message));
srv.close();
process.stdout.write(answer);
`;

function postAfterImporting(module: string, call?: string): string {
  const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', PROBE], {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH, MODULE: module, ...(call ? { CALL: call } : {}) },
    encoding: 'utf8',
    timeout: 120_000,
  });
  t.equal(run.status, 0, run.stderr);
  return run.stdout;
}

t.test("the router's undici, once loaded, leaves the built-in fetch working", async (t) => {
  const module = pathToFileURL(join(REPO_ROOT, 'server/router/undici-package.ts')).href;
  t.equal(
    postAfterImporting(module, 'undici'),
    'got hello',
    'a POST with a Content-Length header after loading it',
  );
});

t.test('so does it from a bundle, whose package imports esbuild hoists above its own code', async (t) => {
  // As the suite's bundles (test/runner/bundle.ts) and the test bundle of Twinbox's entry are made: the
  // package stays an import, and a bundle's imports run before any of its code, so an import placed
  // before `undici` in the source does not run before it in the bundle. In the checkout, so that the
  // bundle's package imports find its node_modules.
  const dir = await mkdtemp(join(REPO_ROOT, '.tap', 'fetch-first-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const out = join(dir, 'router.mjs');
  await build({
    absWorkingDir: REPO_ROOT,
    // The router's upstream pools, and the module that loads undici for them.
    stdin: {
      contents:
        "import './server/router/upstream.ts'; export { undici } from './server/router/undici-package.ts';",
      resolveDir: REPO_ROOT,
      loader: 'ts',
    },
    outfile: out,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    logLevel: 'silent',
  });
  t.equal(
    postAfterImporting(pathToFileURL(out).href, 'undici'),
    'got hello',
    'a POST with a Content-Length header after loading it from the bundle',
  );
});

t.test('the control: the undici package alone breaks that POST, so the case above can fail', async (t) => {
  t.match(postAfterImporting('undici'), /^failed: invalid content-length header/);
});
