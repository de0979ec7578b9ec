import type { TwinFactory } from './driver.ts';
import type { ScenarioPreset } from './presets.ts';
import { githubTwin } from './github/twin.ts';
import { slackTwin } from './slack/twin.ts';
import { stripeTwin } from './stripe/twin.ts';
import { awsTwin } from './aws/twin.ts';
import { oktaTwin } from './okta/twin.ts';
import { resendTwin } from './resend/twin.ts';
import { twilioTwin } from './twilio/twin.ts';
import { linearTwin } from './linear/twin.ts';
import { vercelTwin } from './vercel/twin.ts';
import { mongoatlasTwin } from './mongoatlas/twin.ts';
import { googleTwin } from './google/twin.ts';
import { microsoftTwin } from './microsoft/twin.ts';
import { appleTwin } from './apple/twin.ts';
import { clerkTwin } from './clerk/twin.ts';

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
