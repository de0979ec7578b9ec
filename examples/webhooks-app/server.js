// An app that sells one T-shirt through Stripe Checkout and listens to Stripe, GitHub and Slack. In a
// Twinbox sandbox its twins play the three vendors: Twinbox gives it their variables (STRIPE_SECRET_KEY,
// STRIPE_API_BASE, STRIPE_WEBHOOK_SECRET, GITHUB_WEBHOOK_SECRET, SLACK_SIGNING_SECRET) and points each
// twin's webhooks at the paths in .github/twinbox.yml. Against the real vendors the same code runs with
// STRIPE_API_BASE unset. Every webhook is verified before it is believed: a forged one is a 400.
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';
import Stripe from 'stripe';

const env = process.env;
const base = env.STRIPE_API_BASE ? new URL(env.STRIPE_API_BASE) : undefined;
const stripe = new Stripe(env.STRIPE_SECRET_KEY ?? '', {
  ...(base && { host: base.hostname, port: Number(base.port), protocol: base.protocol.replace(':', '') }),
});

const MAX_BODY = 1024 * 1024;
/** Checkout sessions this app created, by id: `open` until Stripe's signed event says they are paid. */
const orders = new Map();
/** Every webhook that passed its check, newest last. */
const received = [];

class HttpError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on('data', (chunk) => {
      size += chunk.length;
      if (size > MAX_BODY) reject(new HttpError(413, 'body too large'));
      else chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function sameSecret(a, b) {
  const x = Buffer.from(String(a));
  const y = Buffer.from(String(b));
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The origin the browser sees (through Twinbox's router, or any proxy that says so). */
function publicOrigin(req) {
  const proto = String(req.headers['x-forwarded-proto'] ?? 'http')
    .split(',')[0]
    .trim();
  const host = String(req.headers['x-forwarded-host'] ?? req.headers.host)
    .split(',')[0]
    .trim();
  return `${proto}://${host}`;
}

// ---- webhooks: each verified the vendor's documented way ----

/** Stripe: the SDK's own check of Stripe-Signature (timestamp and HMAC) with the endpoint's secret. */
function onStripe(body, headers) {
  let event;
  try {
    event = stripe.webhooks.constructEvent(body, headers['stripe-signature'], env.STRIPE_WEBHOOK_SECRET);
  } catch (error) {
    throw new HttpError(400, `Webhook Error: ${error.message}`);
  }
  const object = event.data.object;
  if (event.type === 'checkout.session.completed' && orders.has(object.id)) {
    orders.set(object.id, { ...orders.get(object.id), status: object.payment_status, event: event.id });
  }
  received.push({
    source: 'stripe',
    type: event.type,
    id: event.id,
    summary: object.last_payment_error?.message ?? object.id,
  });
}

/** GitHub: X-Hub-Signature-256 is `sha256=` HMAC of the body with the webhook's secret. */
function onGitHub(body, headers) {
  const expected = `sha256=${createHmac('sha256', env.GITHUB_WEBHOOK_SECRET ?? '')
    .update(body)
    .digest('hex')}`;
  if (!env.GITHUB_WEBHOOK_SECRET || !sameSecret(headers['x-hub-signature-256'] ?? '', expected))
    throw new HttpError(400, 'X-Hub-Signature-256 does not match');
  const payload = JSON.parse(body.toString('utf8'));
  received.push({
    source: 'github',
    type: `${headers['x-github-event']}${payload.action ? `.${payload.action}` : ''}`,
    id: headers['x-github-delivery'],
    summary: payload.issue?.title ?? payload.repository?.full_name ?? '',
  });
}

/** Slack: `v0=` HMAC of `v0:<timestamp>:<body>` with the signing secret, and a timestamp within 5 minutes. */
function onSlack(body, headers) {
  const timestamp = Number(headers['x-slack-request-timestamp']);
  if (!Number.isFinite(timestamp) || Math.abs(Date.now() / 1000 - timestamp) > 300)
    throw new HttpError(400, 'X-Slack-Request-Timestamp is missing or too old');
  const expected = `v0=${createHmac('sha256', env.SLACK_SIGNING_SECRET ?? '')
    .update(`v0:${headers['x-slack-request-timestamp']}:${body}`)
    .digest('hex')}`;
  if (!env.SLACK_SIGNING_SECRET || !sameSecret(headers['x-slack-signature'] ?? '', expected))
    throw new HttpError(400, 'X-Slack-Signature does not match');
  const payload = JSON.parse(body.toString('utf8'));
  // Slack checks a new Request URL with a challenge it wants back.
  if (payload.type === 'url_verification') return { challenge: payload.challenge };
  received.push({
    source: 'slack',
    type: payload.event?.type ?? payload.type,
    id: payload.event_id,
    summary: payload.event?.text ?? '',
  });
  return undefined;
}

const WEBHOOKS = {
  '/api/webhooks/stripe': onStripe,
  '/api/webhooks/github': onGitHub,
  '/api/slack/events': onSlack,
};

// ---- pages ----

const escape = (text) => String(text ?? '').replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function page(title, body, { refresh = false } = {}) {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escape(title)}</title>${
    refresh ? '<meta http-equiv="refresh" content="1">' : ''
  }</head><body><h1>${escape(title)}</h1>${body}<p><a href="/">Shop</a> · <a href="/events">Webhooks received</a></p></body></html>`;
}

function home() {
  const rows = [...orders].map(
    ([id, order]) => `<li><a href="/orders/${escape(id)}">${escape(id)}</a>: ${escape(order.status)}</li>`,
  );
  return page(
    'Twinbox T-shirt shop',
    `<form method="post" action="/checkout"><button type="submit">Buy a T-shirt ($20.00)</button></form>
<h2>Orders</h2><ul>${rows.join('') || '<li>none yet</li>'}</ul>`,
  );
}

function orderPage(id) {
  const order = orders.get(id);
  if (!order) throw new HttpError(404, `no order ${id}`);
  const paid = order.status === 'paid';
  return page(
    `Order ${id}`,
    `<p>Payment status: <strong id="status" data-status="${escape(order.status)}">${escape(order.status)}</strong></p>
${paid ? `<p>Confirmed by Stripe's signed event ${escape(order.event)}.</p>` : '<p>Waiting for checkout.session.completed…</p>'}
`,
    { refresh: !paid },
  );
}

function eventsPage() {
  const rows = received.map(
    (r) =>
      `<tr><td>${escape(r.source)}</td><td>${escape(r.type)}</td><td>${escape(r.summary)}</td><td>${escape(r.id)}</td></tr>`,
  );
  return page(
    'Webhooks received (all verified)',
    `<table><thead><tr><th>from</th><th>event</th><th>about</th><th>id</th></tr></thead><tbody>${rows.join('')}</tbody></table>`,
  );
}

async function checkout(req) {
  const origin = publicOrigin(req);
  const session = await stripe.checkout.sessions.create({
    mode: 'payment',
    line_items: [
      {
        price_data: { currency: 'usd', product_data: { name: 'Twinbox T-shirt' }, unit_amount: 2000 },
        quantity: 1,
      },
    ],
    success_url: `${origin}/orders/{CHECKOUT_SESSION_ID}`,
    cancel_url: `${origin}/`,
  });
  orders.set(session.id, { status: session.payment_status });
  return session.url;
}

async function handle(req, res) {
  const url = new URL(req.url, 'http://app');
  const html = (status, text) => {
    res.writeHead(status, { 'content-type': 'text/html; charset=utf-8' });
    res.end(text);
  };
  if (req.method === 'GET' && url.pathname === '/healthz') return res.end('ok');
  if (req.method === 'GET' && url.pathname === '/') return html(200, home());
  if (req.method === 'GET' && url.pathname === '/events') return html(200, eventsPage());
  if (req.method === 'GET' && url.pathname === '/events.json') {
    res.writeHead(200, { 'content-type': 'application/json' });
    return res.end(JSON.stringify({ received, orders: Object.fromEntries(orders) }));
  }
  const order = /^\/orders\/([\w-]+)$/.exec(url.pathname);
  if (req.method === 'GET' && order) return html(200, orderPage(order[1]));
  if (req.method === 'POST' && url.pathname === '/checkout') {
    res.writeHead(303, { location: await checkout(req) });
    return res.end();
  }
  const webhook = WEBHOOKS[url.pathname];
  if (req.method === 'POST' && webhook) {
    const answer = webhook(await readBody(req), req.headers);
    res.writeHead(200, { 'content-type': 'application/json' });
    return res.end(JSON.stringify(answer ?? { received: true }));
  }
  throw new HttpError(404, `nothing at ${req.method} ${url.pathname}`);
}

createServer((req, res) => {
  handle(req, res).catch((error) => {
    const status = error instanceof HttpError ? error.status : 502;
    if (status >= 500) console.error(error);
    else console.log(`${req.method} ${req.url}: ${status} ${error.message}`);
    if (!res.headersSent) res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
    res.end(error.message);
  });
}).listen(Number(env.PORT ?? 3000), '127.0.0.1', () => console.log(`listening on ${env.PORT ?? 3000}`));
