import t from 'tap';
import { statSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { createUser } from '../helpers/twinbox.ts';
import { deploySandbox, deployingTwinbox, githubToDeployFrom, settle } from '../helpers/deploy.ts';
import { requireHost } from './isolation-fixtures.ts';

// A deployed app tries to exceed every per-sandbox limit at once and reports how far it got. The unit
// tests in limits.test.ts prove each mechanism; this one proves a real deploy is under all of them.
const hog = `
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const write = (path, mib) => {
  try { fs.writeFileSync(path, Buffer.alloc(mib * 1024 * 1024, 1)); return 'written'; }
  catch (e) { return e.code || e.message; }
};
spawnSync('/bin/sh', ['-c', 'for i in $(seq 1 200); do sleep 20 >/dev/null 2>&1 & done 2>/dev/null; exit 0']);
// Counted from here: once the limit is reached nothing more can fork, not even a counting command.
const running = fs.readdirSync('/proc').filter((n) => /^\\d+$/.test(n)).length;
const memory = spawnSync(process.execPath, ['-e', 'const a = []; for (;;) a.push(Buffer.alloc(16 * 1024 * 1024, 1));']);
const report = {
  processes: running,
  memory: memory.signal || memory.status,
  tmp: write('/tmp/big', 24),
  workspace: write('big', 48),
};
spawnSync('/bin/sh', ['-c', 'pkill sleep || true']);
process.stdout.write('x'.repeat(1024 * 1024).concat('\\n').repeat(8));
require('node:http').createServer((q, s) => s.end(JSON.stringify(report))).listen(Number(process.env.PORT));
`;

t.test('a deployed app stays within its process, memory, /tmp, workspace and log limits', async (t) => {
  if (!requireHost(t, { bwrap: true, cgroups: true, root: true })) return;
  const gh = await githubToDeployFrom(t);
  await gh.createRepo({
    owner: 'octocat',
    name: 'hog',
    files: { 'package.json': JSON.stringify({ name: 'hog', main: 'hog.js' }), 'hog.js': hog },
  });
  const tb = await deployingTwinbox(t, gh, {
    TWINBOX_SANDBOX_PIDS: '64',
    TWINBOX_APP_MEMORY_MB: '256',
    TWINBOX_SANDBOX_TMP_MB: '8',
    TWINBOX_SANDBOX_DISK_MB: '32',
    TWINBOX_APP_LOG_FILE_BYTES: String(2 * 1024 * 1024),
  });
  const user = await createUser(tb);
  const sandbox = await deploySandbox(tb, user, { repo: 'octocat/hog', branch: 'main' });
  t.equal(sandbox.status, 'ready', sandbox.error ?? '');
  const report = (await (await fetch(sandbox.app_url)).json()) as Record<string, unknown>;
  t.comment(JSON.stringify(report));
  t.ok(Number(report.processes) > 10, `the fork loop ran (${report.processes} processes seen)`);
  t.ok(Number(report.processes) <= 64, `at most the process limit ran at once (${report.processes} of 200)`);
  // The cgroup's OOM killer (SIGKILL) or, first, the per-process RLIMIT_DATA (V8 aborts): either way it died.
  t.match(String(report.memory), /^SIG(KILL|ABRT)$/, 'the allocation past the memory limit was stopped');
  t.equal(report.tmp, 'ENOSPC', '/tmp is capped');
  t.equal(report.workspace, 'ENOSPC', 'the workspace is capped');
  const logDir = join(tb.dataDir, 'logs');
  const onDisk = [`${sandbox.sandbox_id}.log`, `${sandbox.sandbox_id}.log.1`]
    .map((name) => join(logDir, name))
    .filter((path) => existsSync(path))
    .reduce((sum, path) => sum + statSync(path).size, 0);
  t.ok(onDisk <= 2 * 1024 * 1024, `8 MiB of output leaves ${onDisk} bytes on disk (cap 2 MiB)`);
});
