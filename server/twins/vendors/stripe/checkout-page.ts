/**
 * The hosted Checkout page a session's `url` opens, served by the twin itself: the order summary and a
 * card form. A person types a test card (4242 4242 4242 4242 pays, 4000 0000 0000 0002 is declined with
 * "Your card was declined."), an expiry and a CVC; on success the browser is sent to `success_url` with
 * `{CHECKOUT_SESSION_ID}` filled in.
 *
 * Server-rendered, no script; every value from the session is escaped; the stylesheet is the only
 * subresource (CSP `default-src 'none'`), and the form may post only here and be redirected only to the
 * session's own success URL.
 */
import { StripeError } from './errors.ts';
import {
  checkoutTrialDays,
  completeCheckoutSession,
  lineItemsList,
  retrieveCheckoutSession,
  type CardEntry,
} from './resources/checkout-sessions.ts';
import { formatAmount } from './resources/invoice-lines.ts';
import type { StripeObject, StripeStore } from './store.ts';

export const CHECKOUT_PATH = /^\/c\/pay\/(cs_test_[A-Za-z0-9]+)$/;
export const STYLESHEET_PATH = '/c/assets/checkout.css';

const STYLESHEET = `*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1a1f36;background:#f6f9fc}
main{max-width:920px;margin:0 auto;padding:32px 16px;display:grid;gap:32px;grid-template-columns:repeat(auto-fit,minmax(300px,1fr))}
.badge{display:inline-block;font-size:12px;font-weight:600;letter-spacing:.04em;color:#b3063d;background:#ffe4ec;border-radius:4px;padding:2px 6px}
h1{font-size:18px;font-weight:500;color:#697386;margin:12px 0 0}
.total{font-size:36px;font-weight:600;margin:4px 0 24px}
table{width:100%;border-collapse:collapse}
td{padding:8px 0;border-bottom:1px solid #e3e8ee;vertical-align:top}
td.amount{text-align:right;white-space:nowrap}
.muted{color:#697386;font-size:14px}
form{display:grid;gap:14px}
label,legend{font-size:14px;font-weight:500;color:#3c4257}
fieldset{border:0;margin:0;padding:0;display:grid;gap:8px;grid-template-columns:1fr 1fr}
fieldset legend{grid-column:1/-1;margin-bottom:4px}
.field{display:grid;gap:4px}
.wide{grid-column:1/-1}
input{font:inherit;padding:10px 12px;border:1px solid #cfd7df;border-radius:6px;background:#fff;width:100%}
input:focus{outline:2px solid #635bff;outline-offset:1px}
button{font:inherit;font-weight:600;color:#fff;background:#635bff;border:0;border-radius:6px;padding:12px;cursor:pointer}
.error{color:#df1b41;background:#fff0f3;border:1px solid #ffd1db;border-radius:6px;padding:10px 12px;margin:0}
.notice{background:#fff;border:1px solid #e3e8ee;border-radius:8px;padding:24px}
a{color:#635bff}
`;

export function escapeHtml(value: unknown): string {
  return String(value ?? '').replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );
}

function originOf(url: unknown): string | undefined {
  try {
    return typeof url === 'string' ? new URL(url.replace(/\{CHECKOUT_SESSION_ID\}/g, 'x')).origin : undefined;
  } catch {
    return undefined;
  }
}

function headers(contentType: string, session?: StripeObject): Record<string, string> {
  const redirectTo = originOf(session?.success_url);
  return {
    'content-type': contentType,
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'same-origin',
    'x-frame-options': 'DENY',
    // form-action also governs where the post's redirect may go: the session's success URL only.
    'content-security-policy': [
      "default-src 'none'",
      "style-src 'self'",
      `form-action 'self'${redirectTo ? ` ${redirectTo}` : ''}`,
      "base-uri 'none'",
      "frame-ancestors 'none'",
    ].join('; '),
  };
}

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<link rel="stylesheet" href="${STYLESHEET_PATH}">
</head>
<body>
${body}
</body>
</html>
`;
}

function notice(status: number, title: string, text: string): Response {
  const body = `<main><section class="notice"><span class="badge">TEST MODE</span><h1>${escapeHtml(title)}</h1><p>${escapeHtml(text)}</p></section></main>`;
  return new Response(page(title, body), { status, headers: headers('text/html; charset=utf-8') });
}

interface FormState {
  error?: string;
  email?: string;
  name?: string;
}

function renderForm(
  session: StripeObject,
  items: StripeObject[],
  state: FormState,
  status: number,
): Response {
  const currency = String(session.currency ?? 'usd');
  const total = formatAmount(Number(session.amount_total ?? 0), currency);
  const recurring = items.find((i) => (i.price as StripeObject).type === 'recurring');
  const interval = recurring
    ? ((recurring.price as StripeObject).recurring as { interval: string }).interval
    : '';
  const askEmail = !session.customer_email && !session.customer;
  const trial = session.mode === 'subscription' && (session as { _trial?: boolean })._trial;
  const action = session.mode === 'subscription' ? (trial ? 'Start trial' : 'Subscribe') : 'Pay';
  const rows = items
    .map((item) => {
      const price = item.price as StripeObject;
      const each = formatAmount(Number(price.unit_amount ?? 0), currency);
      const per =
        price.type === 'recurring'
          ? ` / ${escapeHtml((price.recurring as { interval: string }).interval)}`
          : '';
      return `<tr><td>${escapeHtml(item.description ?? price.product)}<br><span class="muted">Qty ${escapeHtml(item.quantity)} × ${escapeHtml(each)}${per}</span></td><td class="amount">${escapeHtml(formatAmount(Number(item.amount_total), currency))}</td></tr>`;
    })
    .join('\n');
  const body = `<main>
<section aria-labelledby="summary-title">
<span class="badge">TEST MODE</span>
<h1 id="summary-title">${session.mode === 'subscription' ? 'Subscribe to Twinbox test account' : 'Pay Twinbox test account'}</h1>
<p class="total" data-testid="total">${escapeHtml(total)}${interval ? ` <span class="muted">per ${escapeHtml(interval)}</span>` : ''}</p>
<table aria-label="Order summary">
${rows}
</table>
</section>
<section aria-labelledby="pay-title">
<h2 id="pay-title">Pay with card</h2>
${state.error ? `<p class="error" role="alert" id="checkout-error">${escapeHtml(state.error)}</p>` : ''}
<form method="post" action="/c/pay/${escapeHtml(session.id)}" novalidate>
${
  askEmail
    ? `<div class="field"><label for="email">Email</label><input id="email" name="email" type="email" autocomplete="email" required value="${escapeHtml(state.email)}"></div>`
    : `<p class="muted">Paying as ${escapeHtml(session.customer_email ?? 'the customer on file')}</p>`
}
<fieldset>
<legend>Card information</legend>
<div class="field wide"><label for="cardNumber">Card number</label><input id="cardNumber" name="card_number" inputmode="numeric" autocomplete="cc-number" placeholder="1234 1234 1234 1234" required></div>
<div class="field"><label for="cardExpiry">Expiration date (MM / YY)</label><input id="cardExpiry" name="card_expiry" inputmode="numeric" autocomplete="cc-exp" placeholder="MM / YY" required></div>
<div class="field"><label for="cardCvc">Security code (CVC)</label><input id="cardCvc" name="card_cvc" inputmode="numeric" autocomplete="cc-csc" placeholder="CVC" required></div>
</fieldset>
<div class="field"><label for="billingName">Cardholder name</label><input id="billingName" name="billing_name" autocomplete="cc-name" value="${escapeHtml(state.name)}"></div>
<button type="submit">${escapeHtml(action)}</button>
</form>
${session.cancel_url ? `<p><a href="${escapeHtml(session.cancel_url)}">Cancel and go back</a></p>` : ''}
</section>
</main>`;
  return new Response(page('Checkout · Twinbox Stripe twin', body), {
    status,
    headers: headers('text/html; charset=utf-8', session),
  });
}

function luhn(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = Number(digits[digits.length - 1 - i]);
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

/** The card entry of a posted form, or the message Stripe's card field shows for what is wrong. */
export function readCard(form: URLSearchParams, askEmail: boolean): CardEntry | { error: string } {
  const email = (form.get('email') ?? '').trim();
  if (askEmail) {
    if (!email) return { error: 'Your email is incomplete.' };
    if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email)) return { error: 'Your email address is invalid.' };
  }
  const number = (form.get('card_number') ?? '').replace(/[\s-]/g, '');
  if (!/^\d*$/.test(number)) return { error: 'Your card number is invalid.' };
  if (number.length < 13) return { error: 'Your card number is incomplete.' };
  if (number.length > 19 || !luhn(number)) return { error: 'Your card number is invalid.' };
  const expiry = /^\s*(\d{1,2})\s*\/?\s*(\d{2}|\d{4})\s*$/.exec(form.get('card_expiry') ?? '');
  if (!expiry) return { error: "Your card's expiration date is incomplete." };
  const month = Number(expiry[1]);
  const year = expiry[2]!.length === 2 ? 2000 + Number(expiry[2]) : Number(expiry[2]);
  if (month < 1 || month > 12) return { error: "Your card's expiration date is invalid." };
  const today = new Date();
  if (year < today.getUTCFullYear()) return { error: "Your card's expiration year is in the past." };
  if (year === today.getUTCFullYear() && month < today.getUTCMonth() + 1) {
    return { error: "Your card's expiration date is in the past." };
  }
  const cvc = (form.get('card_cvc') ?? '').trim();
  if (!/^\d{3,4}$/.test(cvc)) return { error: "Your card's security code is incomplete." };
  const name = (form.get('billing_name') ?? '').trim().slice(0, 200);
  return { number, exp_month: month, exp_year: year, ...(email ? { email } : {}), ...(name ? { name } : {}) };
}

/** Answers the page's routes (GET and POST `/c/pay/{id}`, the stylesheet); undefined for other paths. */
export async function checkoutPage(request: Request, store: StripeStore): Promise<Response | undefined> {
  const url = new URL(request.url);
  if (url.pathname === STYLESHEET_PATH) {
    if (request.method !== 'GET' && request.method !== 'HEAD') return notice(405, 'Not allowed', 'Use GET.');
    return new Response(STYLESHEET, {
      status: 200,
      headers: {
        'content-type': 'text/css; charset=utf-8',
        'cache-control': 'no-store',
        'x-content-type-options': 'nosniff',
      },
    });
  }
  if (!url.pathname.startsWith('/c/')) return undefined;
  const match = CHECKOUT_PATH.exec(url.pathname);
  if (!match) return notice(404, 'Page not found', 'There is no checkout page at this address.');
  let session: StripeObject;
  try {
    session = retrieveCheckoutSession(store, match[1]!);
  } catch (error) {
    if (!(error instanceof StripeError)) throw error;
    return notice(404, 'Page not found', 'This checkout session does not exist.');
  }
  if (session.status === 'expired') {
    return notice(410, 'This checkout session has expired', 'Go back to the site and start again.');
  }
  if (session.status === 'complete') {
    return notice(200, 'Payment complete', 'This checkout session has already been paid.');
  }
  const items = (lineItemsList(store, session.id).data ?? []) as StripeObject[];
  const trial = Boolean(checkoutTrialDays(store, session.id));
  const shown = { ...session, _trial: trial } as StripeObject;
  if (request.method === 'GET' || request.method === 'HEAD') return renderForm(shown, items, {}, 200);
  if (request.method !== 'POST') return notice(405, 'Not allowed', 'Use GET or POST.');
  const form = new URLSearchParams(await request.text());
  const askEmail = !session.customer_email && !session.customer;
  const state = { email: form.get('email') ?? '', name: form.get('billing_name') ?? '' };
  const card = readCard(form, askEmail);
  if ('error' in card) return renderForm(shown, items, { ...state, error: card.error }, 400);
  try {
    const completed = completeCheckoutSession(store, session.id, card);
    const target = String(completed.success_url ?? '').replace(/\{CHECKOUT_SESSION_ID\}/g, completed.id);
    if (!target) return notice(200, 'Payment complete', 'Thank you! You can close this page.');
    return new Response(null, {
      status: 303,
      headers: { ...headers('text/plain', session), location: target },
    });
  } catch (error) {
    if (!(error instanceof StripeError)) throw error;
    return renderForm(shown, items, { ...state, error: String(error.body.message) }, error.status);
  }
}
