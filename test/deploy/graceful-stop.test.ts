import t, { type Test } from 'tap';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { IsolationMode } from '../../server/deploy/confinement/isolation.ts';
import { LogSink } from '../../server/deploy/confinement/logs.ts';
import { groupAlive, spawnGroup } from '../../server/deploy/confinement/processes.ts';
import { until } from '../helpers/deploy.ts';
import {
  LIMITS,
  MiB,
  bubblewrapModes,
  isolationFor,
  requireHost,
  sandboxId,
  scratch,
} from '../security/isolation-fixtures.ts';

const limits = { ...LIMITS, memoryBytes: 512 * MiB };

/** Stops the way a server does on SIGTERM: finishes what it was doing (here: 200 ms), writes, exits 0. */
const app = `const { writeFileSync } = require('node:fs');
process.on('SIGTERM', () =>
  setTimeout(() => {
    writeFileSync('stopped', 'gracefully');
    process.exit(0);
  }, 200),
);
setInterval(() => {}, 1000);
console.log('up');
`;

/**
 * kill() must give the app its SIGTERM and time to act on it: signalled along with the app, the outer
 * bwrap (no handler) died at once and --die-with-parent SIGKILLed the namespace, and the wrapping shell's
 * death ended the group the same way, so no app ever finished a graceful stop.
 */
async function stopsGracefully(t: Test, mode: IsolationMode): Promise<void> {
  const isolation = isolationFor(t, mode, limits);
  const cwd = await scratch(t, 'twinbox-graceful-');
  const logs = await scratch(t, 'twinbox-graceful-log-');
  await writeFile(join(cwd, 'app.js'), app);
  const log = new LogSink(join(logs, 'app.log'), 1 << 20);
  const id = sandboxId();
  t.teardown(() => isolation.release(id));
  const proc = spawnGroup(
    { command: 'node app.js', sandboxId: id, cwd, memoryBytes: limits.memoryBytes },
    {},
    isolation,
    log,
  );
  await until(() => log.text().includes('up'), `the app to start (${mode})`, 60_000);
  await proc.kill(30_000);
  t.same(await proc.exited, { code: 0, signal: null }, `${mode}: the app's own exit code is the group's`);
  t.equal(
    readFileSync(join(cwd, 'stopped'), 'utf8'),
    'gracefully',
    `${mode}: its SIGTERM handler ran to the end`,
  );
  t.notOk(groupAlive(proc.pid), `${mode}: nothing of the group is left`);
}

t.test('bubblewrap: SIGTERM reaches the app, which stops in its own time', async (t) => {
  if (!requireHost(t, { bwrap: true })) return;
  for (const mode of bubblewrapModes(t, limits)) await stopsGracefully(t, mode);
});

t.test('a plain process group: SIGTERM reaches the app, which stops in its own time', async (t) => {
  await stopsGracefully(t, 'process-group');
});
