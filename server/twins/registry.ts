import type { TwinFactory } from './contract.ts';
import { githubTwin } from './vendors/github/twin.ts';
import { slackTwin } from './vendors/slack/twin.ts';
import { stripeTwin } from './vendors/stripe/twin.ts';
import { awsTwin } from './vendors/aws/twin.ts';
import { oktaTwin } from './vendors/okta/twin.ts';
import { resendTwin } from './vendors/resend/twin.ts';
import { twilioTwin } from './vendors/twilio/twin.ts';
import { linearTwin } from './vendors/linear/twin.ts';
import { vercelTwin } from './vendors/vercel/twin.ts';
import { mongoatlasTwin } from './vendors/mongoatlas/twin.ts';
import { googleTwin } from './vendors/google/twin.ts';
import { microsoftTwin } from './vendors/microsoft/twin.ts';
import { appleTwin } from './vendors/apple/twin.ts';
import { clerkTwin } from './vendors/clerk/twin.ts';

/**
 * Every twin implementation, by name, with `create`: the pods' list (server/pod/main.ts), which run the
 * twins, and tests' that run them in-process. The main process lists the descriptors only (descriptors.ts,
 * in the same order): it never starts a twin, and a driver costs every process that imports it. A twin
 * joins both once its official-SDK flow passes in test/twins.
 */
export const twinFactories: ReadonlyMap<string, TwinFactory> = new Map(
  [
    githubTwin,
    stripeTwin,
    slackTwin,
    resendTwin,
    twilioTwin,
    awsTwin,
    oktaTwin,
    vercelTwin,
    mongoatlasTwin,
    googleTwin,
    microsoftTwin,
    appleTwin,
    linearTwin,
    clerkTwin,
  ].map((f) => [f.name, f]),
);
