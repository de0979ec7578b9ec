/**
 * @slack/web-api 6 built the checked way, as `slackClient` (vendor-schema.ts) builds today's major: the twin
 * tests build no WebClient themselves (vendor-schema.test.ts), so every answer they get is checked.
 *
 * Version 6 sends its calls with axios and takes no `fetch` (the option came with a later major), so the
 * check is a response interceptor on the client's axios instance: it sees the raw JSON answer before the SDK
 * reads it, as `vendorFetch` does for the current major.
 */
import { WebClient } from 'slack-web-api-v6';
import { assertVendorResponse } from './vendor-schema.ts';

interface AxiosResponseSeen {
  status: number;
  data: unknown;
  config: { url?: string; baseURL?: string; method?: string };
}

interface AxiosHolder {
  axios: { interceptors: { response: { use(ok: (r: AxiosResponseSeen) => AxiosResponseSeen): void } } };
}

/**
 * @slack/web-api 6 as a Bolt-era app builds it from the twin's variables (`slackApiUrl: SLACK_API_URL`), no
 * retries so a failure reaches the test as it is, with each answer checked against Slack's description.
 * `checks` counts the answers checked, so the test can tell the check ran.
 */
export function slackClientV6(token: string, slackApiUrl: string) {
  const client = new WebClient(token, {
    slackApiUrl,
    retryConfig: { retries: 0 },
    rejectRateLimitedCalls: true,
  });
  const checks = { count: 0 };
  // `axios` is private in version 6's declarations; it is the instance every call goes through.
  (client as unknown as AxiosHolder).axios.interceptors.response.use((response) => {
    const url = new URL(response.config.url ?? '', response.config.baseURL);
    assertVendorResponse('slack', {
      method: (response.config.method ?? 'post').toUpperCase(),
      path: url.pathname,
      status: response.status,
      body: response.data,
    });
    checks.count++;
    return response;
  });
  return { client, checks };
}
