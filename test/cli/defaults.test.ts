import t from 'tap';
import { DEFAULT_API_URL, resolveSettings } from '../../client/cli/config.ts';
import { cliHome, runCli } from './run-cli.ts';

// Twinbox is self-hosted: with nothing said, the CLI talks to the Twinbox the README starts on this
// machine, never to a hosted service that does not exist.
t.test('without --api-url, TWINBOX_API_URL or a saved login, the API is the local npm start', async (t) => {
  const home = await cliHome(t);
  const settings = await resolveSettings(undefined, { HOME: home.home });
  t.equal(settings.apiUrl, 'http://127.0.0.1:3000');
  t.equal(DEFAULT_API_URL, 'http://127.0.0.1:3000');
  t.equal(
    (await resolveSettings('http://tb.test:9', { HOME: home.home })).apiUrl,
    'http://tb.test:9',
    'a flag wins',
  );

  // The committed bundle agrees (dist/ is rebuilt from these sources).
  const help = await runCli(home, ['--help']);
  t.equal(help.code, 0);
  t.match(help.stdout, 'the saved config, http://127.0.0.1:3000)', 'the usage names the default');
  t.notMatch(help.stdout, /twinbox\.dev/, 'and no hosted service');
});
