import t from 'tap';
import type { IncomingMessage } from 'node:http';
import { OriginRewriter, requestOrigin } from '../../server/twins/runtime/origin.ts';
import { stripeTwin } from '../../server/twins/vendors/stripe/twin.ts';

// A twin's answers are written with the origin the request came to (api.stripe.com when intercepted),
// except links to pages for a person's browser (TwinFactory.pages), which a browser outside the sandbox
// follows: those keep the public URL.
t.test('links to pages for people keep the public URL; the rest follow the request', async (t) => {
  const own = 'http://sb--stripe.localhost:3000';
  const rewriter = new OriginRewriter(own, stripeTwin.pages);
  t.same(stripeTwin.pages, ['/c/'], "Stripe's hosted Checkout");
  const body = JSON.stringify({
    url: `${own}/c/pay/cs_test_1`,
    api: `${own}/v1/checkout/sessions/cs_test_1`,
    back: `${own}/cancel?next=${encodeURIComponent(`${own}/c/pay/cs_test_1`)}&api=${encodeURIComponent(`${own}/v1/x`)}`,
  });
  const out = JSON.parse(
    rewriter.body(Buffer.from(body), 'application/json', 'https://api.stripe.com').toString(),
  ) as Record<string, string>;
  t.equal(out.url, `${own}/c/pay/cs_test_1`, 'the Checkout page stays where browsers reach it');
  t.equal(out.api, 'https://api.stripe.com/v1/checkout/sessions/cs_test_1', 'an API URL follows the caller');
  t.equal(
    out.back,
    `https://api.stripe.com/cancel?next=${encodeURIComponent(`${own}/c/pay/cs_test_1`)}&api=${encodeURIComponent('https://api.stripe.com/v1/x')}`,
    'the same, percent-encoded',
  );
  const headers = new Headers({
    location: `${own}/c/pay/cs_test_2`,
    link: `<${own}/v1/x?page=2>; rel="next"`,
  });
  rewriter.headers(headers, 'https://api.stripe.com');
  t.equal(headers.get('location'), `${own}/c/pay/cs_test_2`);
  t.equal(headers.get('link'), '<https://api.stripe.com/v1/x?page=2>; rel="next"');

  // Without pages, everything follows the request, as before.
  const plain = new OriginRewriter(own);
  t.equal(
    plain.body(Buffer.from(`${own}/c/pay/x`), 'text/plain', 'https://api.stripe.com').toString(),
    'https://api.stripe.com/c/pay/x',
  );
});

t.test('the origin of a request: its Host, https over TLS or when the router says so', async (t) => {
  const fallback = 'http://127.0.0.1:41000';
  const req = (headers: Record<string, string>, encrypted = false) =>
    ({ headers, socket: { encrypted } }) as unknown as IncomingMessage;
  const cases: Array<[IncomingMessage, string, string]> = [
    [req({ host: 'api.stripe.com' }, true), 'https://api.stripe.com', 'intercepted HTTPS'],
    [req({ host: 'api.stripe.com:443' }, true), 'https://api.stripe.com', 'the default port is left out'],
    [req({ host: 'SB--Stripe.localhost:3000' }), 'http://sb--stripe.localhost:3000', 'the public URL'],
    [
      req({ host: 'sb--stripe.example.com', 'x-forwarded-proto': 'https' }),
      'https://sb--stripe.example.com',
      'behind a TLS proxy',
    ],
    [req({ host: '127.0.0.1:41000' }), fallback, 'the loopback port'],
    [req({}), fallback, 'no Host'],
    [req({ host: 'evil.com/path' }), fallback, 'a Host that is not a host'],
    [req({ host: 'example.com:99999' }), fallback, 'a port no URL can carry'],
    [req({ host: 'a'.repeat(400) }), fallback, 'too long'],
  ];
  for (const [request, origin, what] of cases) t.equal(requestOrigin(request, fallback), origin, what);
  t.equal(cases.length, 9);
});
