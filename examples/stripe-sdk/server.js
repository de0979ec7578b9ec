// The official stripe SDK, pointed at the sandbox's Stripe twin by STRIPE_API_BASE (Twinbox sets it with
// STRIPE_SECRET_KEY). Against real Stripe the same code runs with STRIPE_API_BASE unset.
import { createServer } from 'node:http';
import Stripe from 'stripe';

const base = process.env.STRIPE_API_BASE ? new URL(process.env.STRIPE_API_BASE) : undefined;
const stripe = new Stripe(process.env.STRIPE_SECRET_KEY, {
  ...(base && { host: base.hostname, port: Number(base.port), protocol: base.protocol.replace(':', '') }),
  maxNetworkRetries: 0,
});

createServer(async (req, res) => {
  try {
    const customers = await stripe.customers.list({ limit: 100 });
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(`<h1>Customers</h1><ul>${customers.data.map((c) => `<li>${c.email}</li>`).join('')}</ul>`);
  } catch (error) {
    res.writeHead(502).end(`Stripe said: ${error.message}`);
  }
}).listen(Number(process.env.PORT), '127.0.0.1');
