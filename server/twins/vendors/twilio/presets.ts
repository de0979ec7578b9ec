/**
 * The Twilio twin's scenario presets: ready-made seeds and the counts each one promises. GET /scenarios
 * lists them (server/scenarios/presets.ts sets the order); test/scenarios/presets.test.ts starts each one
 * and checks every promised count through the official SDK, before and after a reset.
 */
import type { TwinPresets } from '../../contract.ts';

export const twilioPresets: TwinPresets = {
  promiseKeys: {
    phone_numbers: "phone numbers, with the twin's default number",
    verify_services: "Verify services, with the twin's default service",
  },
  presets: [
    {
      id: 'preset_sms_verification',
      name: 'SMS sign-in codes',
      description:
        'A Twilio account with two SMS numbers (alerts and support) and a Verify service for sign-in codes whose test code is 424242, beside the default number and Verify service.',
      twins: ['twilio'],
      seed: {
        twilio: {
          phone_numbers: [
            { phone_number: '+15005550006', friendly_name: 'Alerts' },
            { phone_number: '+15005550007', friendly_name: 'Support' },
          ],
          verify_services: [{ friendly_name: 'Acme sign-in', code: '424242' }],
        },
      },
      promises: { twilio: { phone_numbers: 3, verify_services: 2 } },
    },
  ],
};
