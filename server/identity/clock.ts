/** The time source of identity flows (code expiry, rate limits, OAuth state), replaceable in tests. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };
