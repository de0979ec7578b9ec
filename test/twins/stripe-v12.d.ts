/**
 * stripe-node 12 (the `stripe-v12` alias) ships types that declare `module 'stripe'`, which would clash
 * with the current stripe-node's: under its alias it is typed loosely, as a JavaScript app sees it.
 */
declare module 'stripe-v12' {
  const StripeV12: any;
  export default StripeV12;
}
