import t from 'tap';
import { ConfigError, loadConfig } from '../server/config.ts';

t.test('defaults: port 3000, ./.twinbox, free cap 60, development', async (t) => {
  const config = loadConfig({});
  t.equal(config.port, 3000);
  t.equal(config.env, 'development');
  t.match(config.dataDir, /\/\.twinbox$/);
  t.equal(config.freeTtlCapMinutes, 60);
  t.equal(config.adminToken, undefined);
  t.equal(config.bindHost, '127.0.0.1');
});

t.test('a bad value stops startup with a message naming each variable', async (t) => {
  const bad = {
    PORT: 'eighty',
    TWINBOX_FREE_TTL_CAP_MINUTES: '500',
    TWINBOX_JWT_SECRET: 'short',
    NODE_ENV: 'staging',
  };
  try {
    loadConfig(bad);
    t.fail('should have thrown');
  } catch (error) {
    t.ok(error instanceof ConfigError);
    const message = (error as Error).message;
    for (const name of Object.keys(bad)) t.match(message, name);
  }
});

t.test('other environment variables are not ours to judge', async (t) => {
  t.doesNotThrow(() => loadConfig({ PATH: '/bin', SOME_TOOL_SETTING: '!!' }));
});
