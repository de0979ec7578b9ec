// The official stripe SDK, pointed at the sandbox's Stripe twin by STRIPE_API_BASE (Twinbox sets it with
// STRIPE_SECRET_KEY). Against real Stripe the same code runs with STRIPE_API_BASE unset.
import { createServer } from 'node:http';
import Stripe from 'stripe';

const base = process.env.STRIPE_API_BASE ? new URL(process.env.STRIPE_API_BASE) : undefined;
const stripe = new Stripe(process.env.STRIPE_SECRET_KEY, {
  ...(base && { host: base.hostname, port: Number(base.port), protocol: base.protocol.replace(':', '') }),
  maxNetworkRetries: 0,
});

const escape = (text) => String(text ?? '').replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** A small form body (an e-mail address); anything larger is refused. */
function readForm(req) {
  return new Promise((resolve, reject) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk) => {
      body += chunk;
      if (body.length > 10_000) reject(new Error('form too large'));
    });
    req.on('end', () => resolve(new URLSearchParams(body)));
    req.on('error', reject);
  });
}

createServer(async (req, res) => {
  try {
    // "Add customer": one request to the app that creates one Stripe customer (the sandbox's timeline
    // shows the request, the twin call it made and the customer it created).
    if (req.method === 'POST' && req.url === '/customers') {
      const form = await readForm(req);
      await stripe.customers.create({ email: form.get('email') || undefined });
      res.writeHead(303, { location: '/' }).end();
      return;
    }
    // A browser asks for this after every page; it must not cost a Stripe call (nor blur the timeline).
    if (req.url === '/favicon.ico') {
      res.writeHead(404).end();
      return;
    }
    const customers = await stripe.customers.list({ limit: 100 });
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(
      `<h1>Customers</h1><ul>${customers.data.map((c) => `<li>${escape(c.email)}</li>`).join('')}</ul>` +
        '<form method="post" action="/customers"><label>E-mail <input name="email" type="email"></label>' +
        '<button type="submit">Add customer</button></form>',
    );
  } catch (error) {
    res.writeHead(502).end(`Stripe said: ${error.message}`);
  }
}).listen(Number(process.env.PORT), '127.0.0.1');
