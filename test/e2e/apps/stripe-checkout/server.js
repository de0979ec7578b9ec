// Stripe's Checkout quickstart (docs.stripe.com/checkout/quickstart), with the fulfilment webhook of
// docs.stripe.com/checkout/fulfillment: nothing here knows about Twinbox.
const stripe = require('stripe')(process.env.STRIPE_SECRET_KEY);
const express = require('express');
const app = express();

const YOUR_DOMAIN = process.env.DOMAIN;
const endpointSecret = process.env.STRIPE_WEBHOOK_SECRET;

// Orders fulfilled from verified checkout.session.completed events.
const fulfilled = [];

function fulfillCheckout(session) {
  if (fulfilled.some((order) => order.session === session.id)) return;
  fulfilled.push({
    session: session.id,
    payment_status: session.payment_status,
    amount_total: session.amount_total,
  });
  console.log(`Fulfilled Checkout Session ${session.id}`);
}

// The webhook needs the raw body to verify its signature: it comes before any body parser.
app.post('/webhook', express.raw({ type: 'application/json' }), (request, response) => {
  const sig = request.headers['stripe-signature'];
  let event;
  try {
    event = stripe.webhooks.constructEvent(request.body, sig, endpointSecret);
  } catch (err) {
    console.log(`Webhook Error: ${err.message}`);
    return response.status(400).send(`Webhook Error: ${err.message}`);
  }
  if (
    event.type === 'checkout.session.completed' ||
    event.type === 'checkout.session.async_payment_succeeded'
  ) {
    fulfillCheckout(event.data.object);
  }
  response.status(200).end();
});

app.use(express.static('public'));

app.post('/create-checkout-session', async (req, res) => {
  const session = await stripe.checkout.sessions.create({
    line_items: [
      {
        price_data: {
          currency: 'usd',
          product_data: { name: 'Stubborn Attachments' },
          unit_amount: 2000,
        },
        quantity: 1,
      },
    ],
    mode: 'payment',
    success_url: `${YOUR_DOMAIN}/success.html`,
    cancel_url: `${YOUR_DOMAIN}/cancel.html`,
  });

  res.redirect(303, session.url);
});

app.get('/orders', (req, res) => {
  res.json({ fulfilled });
});

app.listen(4242, () => console.log('Running on port 4242'));
