import t, { type Test } from 'tap';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createIsolation } from '../../server/deploy/confinement/isolation.ts';
import {
  LIMITS,
  bubblewrapModes,
  requireHost,
  runIn,
  sandboxId,
  scratch,
  testCgroups,
} from './isolation-fixtures.ts';

// The README's default: the data directory `./.twinbox` inside the checkout, which every pod reads
// (its code, its node_modules). The pod must still own its directory under `.twinbox/pods/`, and neither
// a pod nor an app may see anything else of the data directory: its encryption key above all.
const SECRET = 'the-data-dirs-encryption-key';

async function checkoutWithDataDir(t: Test) {
  const checkout = await scratch(t, 'twinbox-checkout-');
  await writeFile(join(checkout, 'package.json'), '{"name":"twinbox"}\n');
  const dataDir = join(checkout, '.twinbox');
  const pod = join(dataDir, 'pods', 'slot1');
  const workspace = join(dataDir, 'workspaces', 'sb1');
  const cache = join(dataDir, 'cache', 'node_modules', 'key1');
  for (const dir of [pod, workspace, cache]) await mkdir(dir, { recursive: true, mode: 0o700 });
  await writeFile(join(dataDir, 'encryption-key'), SECRET, { mode: 0o600 });
  await writeFile(join(dataDir, 'dev-api-key'), SECRET, { mode: 0o600 });
  await writeFile(join(cache, 'index.js'), 'cached\n');
  return { checkout, dataDir, pod, workspace, cache };
}

t.test('a data directory inside the checkout: the pod owns its directory and sees no secret', async (t) => {
  if (!requireHost(t, { bwrap: true, cgroups: true })) return;
  const modes = bubblewrapModes(t);
  for (const mode of modes) {
    const { checkout, dataDir, pod } = await checkoutWithDataDir(t);
    const masked = createIsolation(mode, LIMITS, { cgroups: testCgroups(t), hidden: [dataDir] });
    // The pod's spec (server/deploy/pods/pods.ts): its directory writable, the checkout read-only.
    const podSpec = { sandboxId: sandboxId(), cwd: pod, readOnly: [checkout] };

    const listens = await runIn(masked, {
      ...podSpec,
      command: `node -e "require('net').createServer().listen('${pod}/ctl.sock', function () { console.log('listening'); this.close(); })"`,
    });
    t.ok(listens.ok, `${mode}: the pod creates its control socket in its own directory: ${listens.error}`);
    t.match(listens.output, /listening/, `${mode}: it listened`);

    const code = await runIn(masked, { ...podSpec, command: `cat ${checkout}/package.json` });
    t.match(code.output, /"twinbox"/, `${mode}: the pod reads the checkout`);

    const secret = await runIn(masked, { ...podSpec, command: `cat ${dataDir}/encryption-key` });
    t.notOk(secret.ok, `${mode}: reading the encryption key fails in the pod`);
    t.notMatch(secret.output, SECRET, `${mode}: the pod never sees the encryption key`);
    const listing = await runIn(masked, { ...podSpec, command: `ls -A ${dataDir}; ls -A ${dataDir}/pods` });
    t.equal(listing.output.trim().split(/\s+/).join(' '), 'pods slot1', `${mode}: only its own directory`);
    const write = await runIn(masked, { ...podSpec, command: `echo x > ${dataDir}/planted` });
    t.notOk(write.ok, `${mode}: the mask over the data directory is read-only`);

    // The control: without the mask, the checkout's bind shows the key; the test above can fail.
    const bare = createIsolation(mode, LIMITS, { cgroups: testCgroups(t) });
    const exposed = await runIn(bare, {
      ...podSpec,
      cwd: checkout,
      command: `cat ${dataDir}/encryption-key`,
    });
    t.match(exposed.output, SECRET, `${mode}: unmasked, the checkout's bind would show the key`);
  }
});

t.test('an app (workspace and cache entry in the data directory) sees no secret of it', async (t) => {
  if (!requireHost(t, { bwrap: true, cgroups: true })) return;
  const modes = bubblewrapModes(t);
  for (const mode of modes) {
    const { dataDir, workspace, cache } = await checkoutWithDataDir(t);
    const masked = createIsolation(mode, LIMITS, { cgroups: testCgroups(t), hidden: [dataDir] });
    const appSpec = { sandboxId: sandboxId(), cwd: workspace, readOnly: [cache] };

    const own = await runIn(masked, {
      ...appSpec,
      command: `echo hi > out && cat out && cat ${cache}/index.js`,
    });
    t.match(own.output, /hi\ncached/, `${mode}: the app writes its workspace and reads its cache entry`);
    for (const file of ['encryption-key', 'dev-api-key']) {
      const read = await runIn(masked, { ...appSpec, command: `cat ../../${file}` });
      t.notOk(read.ok, `${mode}: reading ${file} fails in the app`);
      t.notMatch(read.output, SECRET, `${mode}: the app never sees ${file}`);
    }
    const listing = await runIn(masked, { ...appSpec, command: `ls -A ${dataDir}` });
    t.equal(
      listing.output.trim().split(/\s+/).sort().join(' '),
      'cache workspaces',
      `${mode}: only its paths`,
    );
    // Its install step too: a further writable path inside the data directory stays its own.
    const install = await runIn(masked, {
      ...appSpec,
      writable: [cache],
      command: `echo y > ${cache}/new && cat ${dataDir}/encryption-key`,
    });
    t.notOk(install.ok, `${mode}: the install step cannot read the key either`);
    t.notMatch(install.output, SECRET, `${mode}: not in its output`);
  }
});

t.test('a data directory at /tmp leaves the private /tmp writable', async (t) => {
  if (!requireHost(t, { bwrap: true, cgroups: true })) return;
  const modes = bubblewrapModes(t);
  for (const mode of modes) {
    const { workspace } = await checkoutWithDataDir(t);
    const isolation = createIsolation(mode, LIMITS, { cgroups: testCgroups(t), hidden: ['/tmp/'] });
    const tmp = await runIn(isolation, {
      sandboxId: sandboxId(),
      cwd: workspace,
      command: 'echo x > /tmp/f && cat /tmp/f',
    });
    t.equal(tmp.output.trim(), 'x', `${mode}: /tmp is the command's own, writable`);
  }
});
