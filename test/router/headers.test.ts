import t from 'tap';
import type { IncomingHttpHeaders } from 'node:http';
import { Sessions } from '../../server/auth/sessions.ts';
import { openLowdbStore } from '../../server/store/lowdb-store.ts';
import { generateApiKey } from '../../server/auth/api-key-format.ts';
import {
  forwardRequestHeaders,
  forwardResponseHeaders,
  twinboxCredentials,
  withoutCookieDomain,
  withoutTwinboxCookies,
} from '../../server/router/headers.ts';
import { tempDir } from '../helpers/twinbox.ts';

t.test('Set-Cookie loses every Domain attribute and nothing else', async (t) => {
  const cases: Array<[string, string]> = [
    ['a=1; Domain=localhost', 'a=1'],
    ['a=1; domain=.example.com; Path=/', 'a=1; Path=/'],
    ['a=1;Domain=x;Secure;DOMAIN = y ;HttpOnly', 'a=1;Secure;HttpOnly'],
    ['a=1; Domain; Path=/', 'a=1; Path=/'],
    ['a=domain=1; Path=/', 'a=domain=1; Path=/'],
    ['a=1; Domainx=1', 'a=1; Domainx=1'],
    ['a=1', 'a=1'],
  ];
  for (const [given, expected] of cases) t.equal(withoutCookieDomain(given), expected, given);
});

t.test("the Cookie header without Twinbox's cookies", async (t) => {
  t.equal(withoutTwinboxCookies('a=1;b=2'), 'a=1;b=2', 'untouched when none of ours');
  t.equal(withoutTwinboxCookies('a=1; twinbox_session=x; b=2'), 'a=1; b=2');
  t.equal(withoutTwinboxCookies('twinbox_session=x;twinbox_oauth=y'), undefined);
  t.equal(withoutTwinboxCookies('twinbox_prefs=1; twinbox_session=x'), 'twinbox_prefs=1', 'only our names');
});

t.test("Twinbox's credentials are recognised; a sandbox's own are not", async (t) => {
  const dataDir = await tempDir(t);
  const store = await openLowdbStore(dataDir);
  t.teardown(() => store.close());
  const sessions = await Sessions.create({ secret: undefined, store, dataDir, ttlMinutes: 5 });
  const jwt = await sessions.issue('account-1');
  const admin = 'operator-admin-token-0123456789abcdef0123';
  const isOurs = twinboxCredentials(admin);
  t.ok(isOurs(`Bearer ${generateApiKey()}`), 'API key');
  t.ok(isOurs(`Bearer ${jwt}`), 'session JWT');
  t.ok(isOurs(`bearer   ${jwt}`), 'any case and spacing bearer.ts accepts');
  t.ok(isOurs(`Bearer ${admin}`), 'operator token');
  t.notOk(isOurs(`Bearer ${admin}x`));
  t.notOk(twinboxCredentials()(`Bearer ${admin}`), 'no admin token configured');
  t.notOk(isOurs('Bearer eyJhbGciOiJIUzI1NiJ9.eyJpc3MiOiJhcHAifQ.sig'), "another issuer's JWT");
  t.notOk(isOurs('Bearer not.a.jwt'));
  t.notOk(isOurs('Basic dXNlcjpwYXNz'));
  t.notOk(isOurs('Bearer twinadm_abc'), "the twins' admin token belongs to the sandbox");
});

t.test('request and response headers across the hop', async (t) => {
  const request: IncomingHttpHeaders = {
    host: 'x.localhost',
    connection: 'keep-alive, x-hop, Host',
    'x-hop': '1',
    'keep-alive': 'timeout=5',
    te: 'trailers',
    'transfer-encoding': 'chunked',
    'x-forwarded-proto': 'https',
  };
  forwardRequestHeaders(request, {
    requestId: 'r1',
    remoteAddress: '10.0.0.1',
    encrypted: false,
    upgrade: false,
    isTwinboxCredential: () => false,
  });
  t.same(request, {
    host: 'x.localhost',
    'transfer-encoding': 'chunked',
    'x-forwarded-proto': 'https',
    'x-forwarded-for': '10.0.0.1',
    'x-forwarded-host': 'x.localhost',
    'x-twinbox-request-id': 'r1',
  });

  const upgrade: IncomingHttpHeaders = { host: 'h', connection: 'Upgrade', upgrade: 'websocket' };
  forwardRequestHeaders(upgrade, {
    requestId: 'r2',
    remoteAddress: undefined,
    encrypted: true,
    upgrade: true,
    isTwinboxCredential: () => false,
  });
  t.match(upgrade, { connection: 'Upgrade', upgrade: 'websocket', 'x-forwarded-proto': 'https' });

  const response = forwardResponseHeaders(
    {
      connection: 'close',
      'keep-alive': 'timeout=5',
      'transfer-encoding': 'chunked',
      'set-cookie': ['a=1; Domain=localhost'],
      'content-type': 'text/plain',
    },
    'r3',
  );
  t.same(response, { 'set-cookie': ['a=1'], 'content-type': 'text/plain', 'x-twinbox-request-id': 'r3' });
});
