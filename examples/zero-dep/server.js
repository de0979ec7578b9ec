// A zero-dependency app for Twinbox: it reads its GitHub and Stripe twins with plain fetch, using only
// the variables Twinbox gives every sandbox (GITHUB_API_URL, GITHUB_TOKEN, STRIPE_API_BASE, STRIPE_SECRET_KEY).
import { createServer } from 'node:http';

const env = process.env;

async function getJson(url, token) {
  const response = await fetch(url, {
    headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
  });
  if (!response.ok) throw new Error(`${url} answered ${response.status}`);
  return response.json();
}

async function githubData() {
  if (!env.GITHUB_API_URL) return { error: 'no GitHub twin (GITHUB_API_URL is not set)' };
  const user = await getJson(`${env.GITHUB_API_URL}/user`, env.GITHUB_TOKEN);
  const repos = await getJson(`${env.GITHUB_API_URL}/user/repos?per_page=100`, env.GITHUB_TOKEN);
  return { login: user.login, repos: repos.map((repo) => repo.full_name) };
}

async function stripeData() {
  if (!env.STRIPE_API_BASE) return { error: 'no Stripe twin (STRIPE_API_BASE is not set)' };
  const customers = await getJson(`${env.STRIPE_API_BASE}/v1/customers?limit=100`, env.STRIPE_SECRET_KEY);
  return { customers: customers.data.map((c) => c.email ?? c.id) };
}

const escape = (text) => String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
const list = (items) => `<ul>${items.map((item) => `<li>${escape(item)}</li>`).join('')}</ul>`;

createServer(async (req, res) => {
  try {
    if (req.url === '/healthz') return res.end('ok');
    const [github, stripe] = await Promise.all([
      githubData().catch((e) => ({ error: e.message })),
      stripeData().catch((e) => ({ error: e.message })),
    ]);
    const data = {
      github,
      stripe,
      greeting: env.APP_GREETING ?? 'Hello from a Twinbox sandbox',
      github_server_url: env.GITHUB_SERVER_URL ?? null,
    };
    if (req.url === '/data.json') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify(data));
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    res.end(`<!doctype html><title>Twinbox example</title><h1>${escape(data.greeting)}</h1>
<h2>GitHub (${escape(github.login ?? github.error)})</h2>${list(github.repos ?? [])}
<h2>Stripe customers</h2>${stripe.error ? `<p>${escape(stripe.error)}</p>` : list(stripe.customers)}`);
  } catch (error) {
    res.writeHead(500).end(String(error));
  }
}).listen(Number(env.PORT), '127.0.0.1', () => console.log(`listening on ${env.PORT}`));
