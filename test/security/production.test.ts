import t from 'tap';
import { runTwinboxToExit, spawnTwinbox } from '../helpers/process.ts';
import { tempDir } from '../helpers/twinbox.ts';

// NODE_ENV=production must refuse to run sandboxes unisolated; the error says what is missing and how.
t.test('production does not start without isolation, and says what is missing', async (t) => {
  const { code, output } = await runTwinboxToExit({
    NODE_ENV: 'production',
    TWINBOX_DATA_DIR: await tempDir(t),
    TWINBOX_DEPLOY_ENGINE: 'local',
    TWINBOX_SANDBOX_ISOLATION: 'off',
    TWINBOX_JWT_SECRET: 'x'.repeat(40),
    TWINBOX_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
  });
  t.equal(code, 1, 'the process exits with an error');
  t.match(output, /will not run sandboxes unisolated in production/);
  t.match(output, /process and file-system isolation \(bubblewrap/);
  t.match(output, /network isolation \(isolation is off/);
  t.notMatch(output, /Twinbox listening/, 'it never listened');
});

t.test('development without isolation warns loudly and starts', async (t) => {
  const proc = await spawnTwinbox(t, {
    TWINBOX_DATA_DIR: await tempDir(t),
    TWINBOX_DEPLOY_ENGINE: 'local',
    TWINBOX_SANDBOX_ISOLATION: 'off',
  });
  t.match(proc.output(), /WARNING: sandboxes are NOT isolated here/);
  t.match(proc.output(), /isolation: "none"/);
});

t.test('production does not start without TWINBOX_ENCRYPTION_KEY, and says how to make one', async (t) => {
  const { code, output } = await runTwinboxToExit({
    NODE_ENV: 'production',
    TWINBOX_DATA_DIR: await tempDir(t),
    TWINBOX_DEPLOY_ENGINE: 'none',
    TWINBOX_JWT_SECRET: 'x'.repeat(40),
  });
  t.equal(code, 1, 'the process exits with an error');
  t.match(output, /TWINBOX_ENCRYPTION_KEY is required in production/);
  t.match(output, /openssl rand -base64 32/);
  t.notMatch(output, /Twinbox listening/, 'it never listened');
});

t.test('a TWINBOX_ENCRYPTION_KEY that is not 32 bytes of base64 is refused by name', async (t) => {
  const { code, output } = await runTwinboxToExit({
    TWINBOX_DATA_DIR: await tempDir(t),
    TWINBOX_DEPLOY_ENGINE: 'none',
    TWINBOX_ENCRYPTION_KEY: Buffer.alloc(16, 1).toString('base64'),
  });
  t.equal(code, 1);
  t.match(output, /"TWINBOX_ENCRYPTION_KEY" must be 32 bytes in base64/);
});
