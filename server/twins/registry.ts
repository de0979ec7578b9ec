import type { TwinFactory } from './contract.ts';
import type { ScenarioPreset } from './contract.ts';
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

/** Every twin implementation, by name; the catalog (catalog.ts) lists them all. A twin joins here once its official-SDK flow passes in test/twins. */
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

/**
 * The scenario presets the twins' folders ship, in registry order (each factory's `presets`); the scenario
 * listing (server/scenarios/presets.ts) adds the presets that span several twins and sets the order.
 */
export const twinPresets: readonly ScenarioPreset[] = [...twinFactories.values()].flatMap(
  (f) => f.presets?.presets ?? [],
);
