import t from 'tap';
import { OriginRewriter } from '../../server/twins/runtime/origin.ts';
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
