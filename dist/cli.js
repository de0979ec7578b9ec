#!/usr/bin/env node
import { createRequire as __twinboxCreateRequire } from 'node:module';
const require = __twinboxCreateRequire(import.meta.url);

// client/cli.ts
import { parseArgs as parseArgs5 } from "node:util";

// client/errors.ts
var TwinboxApiError = class extends Error {
  constructor(status, code, detail, body, options) {
    super(status ? `${detail} (HTTP ${status}${code ? `, ${code}` : ""})` : detail, options);
    this.status = status;
    this.code = code;
    this.detail = detail;
    this.body = body;
  }
  status;
  code;
  detail;
  body;
  name = "TwinboxApiError";
};
var SandboxWaitError = class extends Error {
  constructor(reason, sandbox, message) {
    super(message);
    this.reason = reason;
    this.sandbox = sandbox;
  }
  reason;
  sandbox;
  name = "SandboxWaitError";
};
var TwinSetWaitError = class extends Error {
  constructor(reason, twinSet, message) {
    super(message);
    this.reason = reason;
    this.twinSet = twinSet;
  }
  reason;
  twinSet;
  name = "TwinSetWaitError";
};

// client/cli/account-commands.ts
import { parseArgs } from "node:util";

// client/client.ts
var ENDED = /* @__PURE__ */ new Set(["failed", "expired", "deleted"]);
var TwinboxClient = class {
  baseUrl;
  apiKey;
  userAgent;
  constructor(options) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.apiKey = options.apiKey;
    this.userAgent = options.userAgent ?? "twinbox-client";
  }
  createSandbox(request) {
    return this.json("POST", "/sandboxes", request);
  }
  getSandbox(id) {
    return this.json("GET", `/sandboxes/${encodeURIComponent(id)}`);
  }
  listSandboxes(query = {}) {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(query))
      if (value !== void 0) params.set(name, String(value));
    const search = params.size ? `?${params}` : "";
    return this.json("GET", `/sandboxes${search}`);
  }
  /** Every sandbox matching `query`, following `next_cursor` page by page. */
  async *allSandboxes(query = {}) {
    let cursor;
    do {
      const page = await this.listSandboxes({ ...query, cursor });
      yield* page.sandboxes;
      cursor = page.next_cursor ?? void 0;
    } while (cursor);
  }
  deleteSandbox(id) {
    return this.json("DELETE", `/sandboxes/${encodeURIComponent(id)}`);
  }
  /** Starts twins alone, with no repository or app (`POST /twin-sets`). */
  createTwinSet(request) {
    return this.json("POST", "/twin-sets", request);
  }
  getTwinSet(id) {
    return this.json("GET", `/twin-sets/${encodeURIComponent(id)}`);
  }
  listTwinSets(query = {}) {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(query))
      if (value !== void 0) params.set(name, String(value));
    const search = params.size ? `?${params}` : "";
    return this.json("GET", `/twin-sets${search}`);
  }
  deleteTwinSet(id) {
    return this.json("DELETE", `/twin-sets/${encodeURIComponent(id)}`);
  }
  /** What starting the twin set's twins printed, as text. */
  async twinSetLogs(id) {
    const response = await this.request("GET", `/twin-sets/${encodeURIComponent(id)}/logs`);
    return response.text();
  }
  /** `waitUntilReady` for a twin set: its twins start in seconds, so polls start at 250 ms. */
  waitUntilTwinSetReady(id, options) {
    return this.poll(
      `twin set ${id}`,
      () => this.getTwinSet(id),
      { initialDelayMs: 250, ...options },
      (last, timedOut) => {
        const what = `Twin set ${id}`;
        if (timedOut)
          return new TwinSetWaitError(
            "timeout",
            last,
            `${what} was not ready after ${formatDuration(options.timeoutMs)} (status: ${last.status}).`
          );
        return new TwinSetWaitError(
          last.status,
          last,
          last.status === "failed" ? `${what} failed: ${last.error ?? "no reason given"}` : last.status === "expired" ? `${what} expired (its TTL ran out) before it was ready.` : `${what} was deleted before it was ready.`
        );
      }
    );
  }
  /** The sandbox's install, build and app output, as text. */
  async sandboxLogs(id) {
    const response = await this.request("GET", `/sandboxes/${encodeURIComponent(id)}/logs`);
    return response.text();
  }
  /** The log from byte `offset` on (everything kept without one), with the offset to ask from next. */
  async sandboxLogsFrom(id, offset) {
    const query = offset === void 0 ? "" : `?offset=${offset}`;
    const response = await this.request("GET", `/sandboxes/${encodeURIComponent(id)}/logs${query}`);
    const text = await response.text();
    const header = (name) => response.headers.get(name);
    const start = Number(header("x-log-start"));
    const next = Number(header("x-log-offset"));
    if (!Number.isSafeInteger(start) || !Number.isSafeInteger(next)) {
      throw new TwinboxApiError(
        0,
        "unsupported",
        `${this.baseUrl} does not support following logs (no X-Log-Offset header): it is an older Twinbox.`
      );
    }
    return { text, start, next, complete: header("x-log-complete") === "true" };
  }
  /**
   * The log as it grows, a chunk per poll (empty chunks included, so callers can tell it is alive),
   * until the sandbox has ended and its log is complete. Polling with offsets: each poll sends only
   * what is new. Server errors and network failures are retried, for up to `maxOutageMs` in a row.
   */
  async *followSandboxLogs(id, options = {}) {
    const interval = options.intervalMs ?? 1e3;
    const maxOutage = options.maxOutageMs ?? 12e4;
    let offset = options.offset;
    let failingSince;
    for (; ; ) {
      options.signal?.throwIfAborted();
      let chunk;
      try {
        chunk = await this.sandboxLogsFrom(id, offset);
        failingSince = void 0;
      } catch (error) {
        if (!(error instanceof TwinboxApiError) || !(error.status === 0 || error.status >= 500)) throw error;
        if (error.code === "unsupported") throw error;
        failingSince ??= Date.now();
        if (Date.now() - failingSince > maxOutage) throw error;
        await sleep(interval, options.signal);
        continue;
      }
      yield { ...chunk, gap: offset === void 0 ? 0 : chunk.start - offset };
      if (chunk.complete) return;
      offset = chunk.next;
      await sleep(interval, options.signal);
    }
  }
  /** The account the client's token belongs to (`GET /me`). */
  me() {
    return this.json("GET", "/me");
  }
  /** Revokes the API key the client uses (`DELETE /api-keys/current`): signing out for good. */
  revokeCurrentApiKey() {
    return this.json("DELETE", "/api-keys/current");
  }
  /** Mails a sign-in code to `email` (the same answer whether or not it has an account). */
  async requestLoginCode(email) {
    await this.request("POST", "/auth/email/login", { email });
  }
  verifyLoginCode(email, code) {
    return this.json("POST", "/auth/email/login/verify", { email, code });
  }
  /** Needs a session token as the client's key: API keys cannot mint API keys. */
  createApiKey(name) {
    return this.json("POST", "/api-keys", name ? { name } : {});
  }
  /**
   * Polls until the sandbox is `ready` and returns it. Polls back off (500 ms doubling to 5 s by
   * default) so a long build costs a few requests a minute. A sandbox that fails, expires or is deleted
   * ends the wait with a SandboxWaitError, and so does the timeout. Server errors (5xx) and network
   * failures are retried until the timeout: a deploy that takes minutes should outlive a proxy blip.
   */
  async waitUntilReady(id, options) {
    return this.poll(
      `sandbox ${id}`,
      () => this.getSandbox(id),
      options,
      (last, timedOut) => timedOut ? new SandboxWaitError(
        "timeout",
        last,
        `Sandbox ${id} was not ready after ${formatDuration(options.timeoutMs)} (status: ${last.status}).`
      ) : endedError(last)
    );
  }
  /** The polling both waits share; `failure` words the end that is not `ready` (or the timeout). */
  async poll(what, read, options, failure) {
    const started = Date.now();
    let delay = options.initialDelayMs ?? 500;
    const maxDelay = options.maxDelayMs ?? 5e3;
    let last;
    for (; ; ) {
      options.signal?.throwIfAborted();
      try {
        last = await read();
      } catch (error) {
        if (!(error instanceof TwinboxApiError) || !(error.status === 0 || error.status >= 500)) throw error;
      }
      const elapsed = Date.now() - started;
      if (last) {
        options.onProgress?.(last, elapsed);
        if (last.status === "ready") return last;
        if (ENDED.has(last.status)) throw failure(last, false);
      }
      const remaining = options.timeoutMs - elapsed;
      if (remaining <= 0) {
        if (!last) throw new TwinboxApiError(0, "timeout", `Could not read ${what} before the timeout.`);
        throw failure(last, true);
      }
      await sleep(Math.min(delay, remaining), options.signal);
      delay = Math.min(delay * 2, maxDelay);
    }
  }
  async json(method, path, body) {
    const response = await this.request(method, path, body);
    return await response.json();
  }
  async request(method, path, body) {
    const headers = { accept: "application/json", "user-agent": this.userAgent };
    if (this.apiKey) headers.authorization = `Bearer ${this.apiKey}`;
    if (body !== void 0) headers["content-type"] = "application/json";
    let response;
    try {
      response = await fetch(`${this.baseUrl}${path}`, {
        method,
        headers,
        body: body === void 0 ? void 0 : JSON.stringify(body)
      });
    } catch (error) {
      const reason = error.cause;
      const why = reason?.code ?? reason?.message ?? error.message;
      throw new TwinboxApiError(
        0,
        "network_error",
        `Could not reach Twinbox at ${this.baseUrl} (${why}).`,
        void 0,
        {
          cause: error
        }
      );
    }
    if (!response.ok) throw await apiError(response);
    return response;
  }
};
async function apiError(response) {
  const text = await response.text();
  let body;
  try {
    const parsed = JSON.parse(text);
    if (parsed && typeof parsed === "object") body = parsed;
  } catch {
  }
  const detail = body?.detail ?? body?.message ?? (text.trim().slice(0, 200) || `${response.status} ${response.statusText}`);
  return new TwinboxApiError(response.status, body?.code, detail, body);
}
function endedError(sandbox) {
  const id = sandbox.sandbox_id;
  switch (sandbox.status) {
    case "failed":
      return new SandboxWaitError(
        "failed",
        sandbox,
        `Sandbox ${id} failed: ${sandbox.error ?? "no reason given"}`
      );
    case "expired":
      return new SandboxWaitError(
        "expired",
        sandbox,
        `Sandbox ${id} expired (its TTL ran out) before it was ready.`
      );
    default:
      return new SandboxWaitError("deleted", sandbox, `Sandbox ${id} was deleted before it was ready.`);
  }
}
function formatDuration(ms) {
  const seconds = Math.round(ms / 1e3);
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  return seconds % 60 ? `${minutes}m ${seconds % 60}s` : `${minutes}m`;
}
function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true }
    );
  });
}

// client/cli/config.ts
import { chmod, mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, join } from "node:path";

// client/parse.ts
var InputError = class extends Error {
  name = "InputError";
};
function parseList(text) {
  return text.split(/[,\n]/).map((item) => item.trim()).filter(Boolean);
}
function parseEnv(lines, where) {
  const env2 = {};
  lines.forEach((line, index) => {
    if (!line.trim() || line.trim().startsWith("#")) return;
    const eq = line.indexOf("=");
    const key = eq === -1 ? "" : line.slice(0, eq).trim();
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) {
      throw new InputError(
        `${where(index + 1)}: expected KEY=VALUE, with KEY of letters, digits and _ not starting with a digit.`
      );
    }
    if (key in env2) throw new InputError(`${where(index + 1)}: ${key} is set twice.`);
    env2[key] = line.slice(eq + 1);
  });
  return env2;
}
function parseWholeMinutes(label, value) {
  if (!/^\d+$/.test(value))
    throw new InputError(`${label} must be a whole number of minutes, not "${value}".`);
  return Number(value);
}
function parsePositiveMinutes(label, value) {
  const number = Number(value);
  if (!value || !Number.isFinite(number) || number <= 0) {
    throw new InputError(`${label} must be a positive number of minutes, not "${value}".`);
  }
  return number;
}

// client/cli/exit-codes.ts
var EXIT = {
  ok: 0,
  /** Anything unexpected, and server errors (5xx). */
  error: 1,
  /** Bad command line: unknown command or flag, missing or malformed value, an origin that is not GitHub. */
  usage: 2,
  /** Not signed in, or the API key / code was not accepted (401). */
  auth: 3,
  /**
   * Twinbox refused the request as asked (400, 403, 409, 413, 415, 429): `detail` says why; or `open`
   * of a sandbox that has no app yet.
   */
  rejected: 4,
  /** No such sandbox (404), or something this Twinbox does not have (an older version). */
  notFound: 5,
  /**
   * `--wait` (and `twins create`): the sandbox or twin set failed, expired or was deleted instead of
   * becoming ready; `open`: it has ended.
   */
  sandboxEnded: 6,
  /** `--wait`: not ready within `--timeout-minutes`. */
  timeout: 7,
  /** Twinbox could not be reached at all. */
  unreachable: 8
};
var CliError = class extends Error {
  constructor(message, exitCode) {
    super(message);
    this.exitCode = exitCode;
  }
  exitCode;
};
function exitCodeOf(error) {
  if (error instanceof CliError) return error.exitCode;
  if (error instanceof InputError) return EXIT.usage;
  if (error instanceof SandboxWaitError || error instanceof TwinSetWaitError)
    return error.reason === "timeout" ? EXIT.timeout : EXIT.sandboxEnded;
  if (error instanceof TwinboxApiError) {
    if (error.code === "unsupported") return EXIT.notFound;
    if (error.status === 0) return EXIT.unreachable;
    if (error.status === 401) return EXIT.auth;
    if (error.status === 404) return EXIT.notFound;
    if (error.status >= 400 && error.status < 500) return EXIT.rejected;
    return EXIT.error;
  }
  if (error?.code?.startsWith?.("ERR_PARSE_ARGS")) return EXIT.usage;
  return EXIT.error;
}

// client/cli/config.ts
var DEFAULT_API_URL = "http://127.0.0.1:3000";
function configPath(env2 = process.env) {
  const base = env2.XDG_CONFIG_HOME?.trim() || join(env2.HOME?.trim() || homedir(), ".config");
  return join(base, "twinbox", "config.json");
}
async function readConfig(path) {
  let text;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if (error.code === "ENOENT") return {};
    throw error;
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new CliError(
      `${path} is not valid JSON: fix or delete it, then run \`twinbox login\` again.`,
      EXIT.error
    );
  }
}
async function writeConfig(path, config) {
  await mkdir(dirname(path), { recursive: true, mode: 448 });
  const temporary = `${path}.${process.pid}.tmp`;
  await writeFile(temporary, `${JSON.stringify(config, null, 2)}
`, { mode: 384 });
  await chmod(temporary, 384);
  await rename(temporary, path);
}
async function resolveSettings(flagApiUrl, env2 = process.env) {
  const path = configPath(env2);
  const stored = await readConfig(path);
  const envKey = env2.TWINBOX_API_KEY?.trim();
  return {
    apiUrl: flagApiUrl || env2.TWINBOX_API_URL?.trim() || stored.api_url || DEFAULT_API_URL,
    apiKey: envKey || stored.api_key,
    keySource: envKey ? "TWINBOX_API_KEY" : stored.api_key ? "config" : void 0,
    configPath: path,
    githubHosts: githubHosts(env2.TWINBOX_GITHUB_URL?.trim() || stored.github_url)
  };
}
function githubHosts(url) {
  if (!url) return [];
  try {
    const parsed = new URL(url);
    return [.../* @__PURE__ */ new Set([parsed.host.toLowerCase(), parsed.hostname.toLowerCase()])];
  } catch {
    throw new CliError(
      `TWINBOX_GITHUB_URL (or github_url in the config file) is not a URL: "${url}". Give the GitHub server's web URL, e.g. https://github.example.com.`,
      EXIT.usage
    );
  }
}

// client/cli/context.ts
function print(context, text) {
  context.stdout.write(text.endsWith("\n") ? text : `${text}
`);
}
function printJson(context, value) {
  context.stdout.write(`${JSON.stringify(value, null, 2)}
`);
}
async function authenticatedClient(context) {
  const settings = await resolveSettings(context.apiUrlFlag);
  if (!settings.apiKey) {
    throw new CliError(
      "Not signed in: run `twinbox login`, or set TWINBOX_API_KEY to an API key.",
      EXIT.auth
    );
  }
  const client = new TwinboxClient({
    baseUrl: settings.apiUrl,
    apiKey: settings.apiKey,
    userAgent: "twinbox-cli"
  });
  return { client, settings };
}

// client/cli/format.ts
function formatSandbox(sandbox) {
  const rows = [
    ["Sandbox", sandbox.sandbox_id],
    ["Status", sandbox.status]
  ];
  if (sandbox.error) rows.push(["Error", sandbox.error]);
  rows.push(
    ["App", appLine(sandbox)],
    ["Source", `${sandbox.repo} ${target(sandbox)}`],
    lifetimeRow(sandbox)
  );
  if (sandbox.status === "failed") rows.push(["Logs", `twinbox logs ${sandbox.sandbox_id}`]);
  const variables = Object.keys(sandbox.env_vars).sort();
  if (variables.length) rows.push(["Variables", variables.join(", ")]);
  const lines = table(rows.map(([label, value]) => [`${label}:`, value]));
  const twins2 = Object.entries(sandbox.twins);
  if (twins2.length) {
    const live = ["queued", "building", "ready"].includes(sandbox.status);
    lines.push(live ? "Twins:" : "Twins (stopped):");
    lines.push(...table(twins2.map(([name, twin]) => [`  ${name}`, twin.base_url])));
  }
  return lines.join("\n");
}
function formatSandboxList(sandboxes) {
  if (!sandboxes.length) return "No sandboxes.";
  return table([
    ["ID", "STATUS", "REPO", "TARGET", "CREATED"],
    ...sandboxes.map((s) => [s.sandbox_id, s.status, s.repo, target(s), s.created_at])
  ]).join("\n");
}
function appLine(sandbox) {
  switch (sandbox.status) {
    case "ready":
      return sandbox.app_url ?? "(no URL given)";
    case "failed":
      return "(none: the deploy failed, see Error)";
    case "deleted":
      return "(gone: the sandbox was deleted)";
    case "expired":
      return "(gone: the sandbox expired)";
    default:
      return "(not deployed yet)";
  }
}
function lifetimeRow(sandbox) {
  switch (sandbox.status) {
    case "deleted":
      return ["Deleted", sandbox.updated_at];
    case "expired":
      return ["Expired", sandbox.expires_at];
    default:
      return ["Expires", `${sandbox.expires_at} (TTL ${sandbox.ttl_minutes} min)`];
  }
}
function target(sandbox) {
  return sandbox.pr_url ?? (sandbox.branch ? `branch ${sandbox.branch}` : "");
}
function table(rows) {
  const widths = [];
  for (const row of rows) row.forEach((cell, i) => widths[i] = Math.max(widths[i] ?? 0, cell.length));
  return rows.map(
    (row) => row.map((cell, i) => i === row.length - 1 ? cell : cell.padEnd(widths[i])).join("  ").trimEnd()
  );
}

// client/cli/account-commands.ts
async function whoami(context, args) {
  parseArgs({ args, options: {} });
  const { client, settings } = await authenticatedClient(context);
  const me = await client.me();
  const github = me.identities.find((identity) => identity.provider === "github");
  const source = settings.keySource === "TWINBOX_API_KEY" ? "from TWINBOX_API_KEY" : `saved in ${settings.configPath}`;
  if (context.json) {
    printJson(context, { ...me, api_url: settings.apiUrl, key_source: settings.keySource });
    return;
  }
  const rows = [
    ["E-mail:", me.account.email],
    ["Plan:", me.account.plan ?? "(unknown)"],
    ["Token:", me.token_type === "api_key" ? `API key, ${source}` : `session token, ${source}`],
    ["GitHub:", github ? github.login : "not connected (connect it in the web app)"],
    ["API:", settings.apiUrl]
  ];
  print(context, table(rows).join("\n"));
}
async function logout(context, args) {
  parseArgs({ args, options: {} });
  const settings = await resolveSettings(context.apiUrlFlag);
  const stored = await readConfig(settings.configPath);
  const envNote = settings.keySource === "TWINBOX_API_KEY" ? "TWINBOX_API_KEY is set in your environment and still signs you in: unset it (logout never revokes it)." : void 0;
  if (!stored.api_key) {
    if (context.json) {
      printJson(context, {
        forgotten: false,
        revoked: false,
        config: settings.configPath,
        note: envNote ?? null
      });
    } else {
      print(context, `No API key saved in ${settings.configPath}: nothing to forget.`);
      if (envNote) context.stderr.write(`Note: ${envNote}
`);
    }
    return;
  }
  const apiUrl = stored.api_url ?? settings.apiUrl;
  const revocation = await revoke(apiUrl, stored.api_key);
  const { api_key: _key, email: _email, ...rest } = stored;
  await writeConfig(settings.configPath, rest);
  if (context.json) {
    printJson(context, {
      forgotten: true,
      revoked: revocation.revoked,
      api_key_id: revocation.revoked ? revocation.key.id : null,
      revoke_error: revocation.revoked ? null : revocation.why,
      api_url: apiUrl,
      config: settings.configPath,
      note: envNote ?? null
    });
    return;
  }
  const who = stored.email ? ` of ${stored.email}` : "";
  if (revocation.revoked) {
    print(context, `Revoked the API key ${revocation.key.prefix}...${who} on ${apiUrl}.`);
  } else if (revocation.alreadyRevoked) {
    print(context, `The API key${who} was no longer accepted by ${apiUrl} (already revoked).`);
  } else {
    context.stderr.write(
      `twinbox: could not revoke the API key${who} on ${apiUrl}: ${revocation.why}. It still works until you revoke it in the web app.
`
    );
  }
  print(context, `Forgot the API key saved in ${settings.configPath}.`);
  if (envNote) context.stderr.write(`Note: ${envNote}
`);
}
async function revoke(apiUrl, apiKey) {
  const client = new TwinboxClient({ baseUrl: apiUrl, apiKey, userAgent: "twinbox-cli" });
  try {
    return { revoked: true, key: await client.revokeCurrentApiKey() };
  } catch (error) {
    if (!(error instanceof TwinboxApiError)) throw error;
    if (error.status === 401) return { revoked: false, alreadyRevoked: true, why: error.detail };
    return { revoked: false, why: error.message };
  }
}

// client/cli/login.ts
import { hostname } from "node:os";
import { parseArgs as parseArgs2 } from "node:util";

// client/cli/prompt.ts
import { createInterface } from "node:readline";
var Prompter = class {
  constructor(input = process.stdin, output = process.stderr) {
    this.input = input;
    this.output = output;
  }
  input;
  output;
  rl;
  lines;
  /** The answer, trimmed; undefined when stdin ended first. */
  async ask(question) {
    this.output.write(question);
    if (!this.lines) {
      this.rl = createInterface({ input: this.input, terminal: false });
      this.lines = this.rl[Symbol.asyncIterator]();
    }
    const next = await this.lines.next();
    return next.done ? void 0 : next.value.trim();
  }
  close() {
    this.rl?.close();
  }
};

// client/cli/login.ts
async function login(context, args) {
  const { values } = parseArgs2({
    args,
    options: {
      email: { type: "string" },
      code: { type: "string" },
      "send-code": { type: "boolean", default: false },
      name: { type: "string" }
    }
  });
  const settings = await resolveSettings(context.apiUrlFlag);
  const anonymous = new TwinboxClient({ baseUrl: settings.apiUrl, userAgent: "twinbox-cli" });
  const prompter = new Prompter(process.stdin, context.stderr);
  try {
    const email = values.email?.trim() || await prompter.ask("E-mail: ");
    if (!email) throw new InputError("No e-mail address given: pass --email or type it at the prompt.");
    let code = values.code?.trim();
    if (!code) {
      await anonymous.requestLoginCode(email);
      if (values["send-code"]) {
        const apiUrl = context.apiUrlFlag ? ` --api-url ${shellWord(context.apiUrlFlag)}` : "";
        const finish = `twinbox login${apiUrl} --email ${shellWord(email)} --code <code>`;
        if (context.json) printJson(context, { code_sent_to: email, finish_with: finish });
        else print(context, `Sent a sign-in code to ${email}. Finish with: ${finish}`);
        return;
      }
      code = await prompter.ask(`We sent a code to ${email}. Code: `);
      if (!code) throw new InputError("No code entered: run `twinbox login` again, or pass --code.");
    }
    let signedIn;
    try {
      signedIn = await anonymous.verifyLoginCode(email, code);
    } catch (error) {
      if (error instanceof TwinboxApiError && error.status === 400 && error.code === "invalid_code") {
        throw new CliError(`${error.detail} Run \`twinbox login\` again for a new code.`, EXIT.auth);
      }
      throw error;
    }
    const session = new TwinboxClient({
      baseUrl: settings.apiUrl,
      apiKey: signedIn.token,
      userAgent: "twinbox-cli"
    });
    const key = await session.createApiKey(values.name ?? `twinbox CLI on ${hostname()}`);
    const stored = await readConfig(settings.configPath);
    await writeConfig(settings.configPath, { ...stored, api_url: settings.apiUrl, api_key: key.key, email });
    const result = {
      email,
      api_url: settings.apiUrl,
      api_key_id: key.id,
      api_key_prefix: key.prefix,
      config: settings.configPath
    };
    if (context.json) printJson(context, result);
    else print(context, `Signed in as ${email}. API key ${key.prefix}... saved to ${settings.configPath}.`);
    if (settings.keySource === "TWINBOX_API_KEY" && !context.json) {
      context.stderr.write("Note: TWINBOX_API_KEY is set and overrides the saved key until you unset it.\n");
    }
  } finally {
    prompter.close();
  }
}
function shellWord(text) {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

// client/cli/sandbox-commands.ts
import { parseArgs as parseArgs3 } from "node:util";

// client/cli/git.ts
import { execFileSync } from "node:child_process";
function git(args) {
  try {
    return execFileSync("git", args, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim() || void 0;
  } catch {
    return void 0;
  }
}
var OWNER = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$/;
var NAME = /^[A-Za-z0-9._-]{1,100}$/;
function githubRepositoryOf(url, extraHosts = []) {
  const hosts = /* @__PURE__ */ new Set(["github.com", "www.github.com", ...extraHosts.map((h) => h.toLowerCase())]);
  let host;
  let path;
  const scp = /^(?:[^@/:]+@)?([^/:]+):(?!\/)(.+)$/.exec(url);
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) {
    let parsed;
    try {
      parsed = new URL(url);
    } catch {
      return void 0;
    }
    if (!["https:", "http:", "ssh:", "git+ssh:", "git:"].includes(parsed.protocol)) return void 0;
    host = hosts.has(parsed.host.toLowerCase()) ? parsed.host : parsed.hostname;
    path = parsed.pathname;
  } else if (scp) {
    host = scp[1];
    path = scp[2];
  } else {
    return void 0;
  }
  if (!hosts.has(host.toLowerCase())) return void 0;
  const parts = path.replace(/^\/+|\/+$/g, "").replace(/\.git$/, "").split("/");
  if (parts.length !== 2 || !OWNER.test(parts[0]) || !NAME.test(parts[1])) return void 0;
  if (parts[1] === "." || parts[1] === "..") return void 0;
  return `${parts[0]}/${parts[1]}`;
}
function withoutCredentials(url) {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^@/]*@/i, "$1");
}
function originRepository(extraHosts = []) {
  const url = git(["config", "--get", "remote.origin.url"]);
  if (!url) return void 0;
  const repo = githubRepositoryOf(url, extraHosts);
  if (repo) return repo;
  const known = [.../* @__PURE__ */ new Set(["github.com", ...extraHosts])].join(", ");
  throw new InputError(
    `The origin remote (${withoutCredentials(url)}) is not a GitHub repository on ${known}: pass --repo owner/name.`
  );
}
function currentBranch() {
  return git(["symbolic-ref", "--quiet", "--short", "HEAD"]);
}

// client/cli/open-url.ts
import { spawn } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { delimiter, join as join2 } from "node:path";
function opener(url) {
  if (process.platform === "darwin") return { command: "open", args: [url] };
  if (process.platform === "win32") return { command: "cmd", args: ["/c", "start", '""', url] };
  return { command: "xdg-open", args: [url] };
}
function onPath(command) {
  if (process.platform === "win32") return true;
  return (process.env.PATH ?? "").split(delimiter).some((dir) => {
    try {
      accessSync(join2(dir || ".", command), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}
async function openInBrowser(url) {
  const { command, args } = opener(url);
  if (!onPath(command)) return { problem: `no ${command} on the PATH` };
  return new Promise((resolve) => {
    const child = spawn(command, args, { detached: true, stdio: "ignore", windowsHide: true });
    child.once("error", (error) => resolve({ problem: `${command}: ${error.message}` }));
    child.once("spawn", () => {
      child.unref();
      resolve({ command });
    });
  });
}

// client/cli/progress.ts
var ProgressDisplay = class _ProgressDisplay {
  constructor(out = process.stderr, tickMs = 1e3) {
    this.out = out;
    this.tickMs = tickMs;
  }
  out;
  tickMs;
  last;
  frame = 0;
  started = Date.now();
  ticker;
  static FRAMES = ["-", "\\", "|", "/"];
  /** `elapsedMs` is counted from the start of the wait, which the display then keeps counting. */
  update(sandbox, elapsedMs) {
    this.started = Date.now() - elapsedMs;
    const changed = sandbox.status !== this.last?.status;
    this.last = sandbox;
    if (this.out.isTTY) {
      this.draw();
      this.ticker ??= setInterval(() => this.draw(), this.tickMs).unref();
    } else if (changed) {
      this.out.write(`${this.text()}
`);
    }
  }
  /** Ends the in-place line so what follows starts on a fresh one. */
  done() {
    clearInterval(this.ticker);
    this.ticker = void 0;
    if (this.out.isTTY && this.last) this.out.write("\n");
  }
  text() {
    const sandbox = this.last;
    return `Sandbox ${sandbox.sandbox_id}: ${sandbox.status} (${formatDuration(Date.now() - this.started)})`;
  }
  draw() {
    const spinner = _ProgressDisplay.FRAMES[this.frame++ % _ProgressDisplay.FRAMES.length];
    this.out.write(`\r\x1B[2K${spinner} ${this.text()}`);
  }
};

// client/cli/sandbox-commands.ts
var DEFAULT_TIMEOUT_MINUTES = "15";
async function create(context, args) {
  const { values } = parseArgs3({
    args,
    options: {
      repo: { type: "string" },
      branch: { type: "string" },
      "pr-url": { type: "string" },
      twins: { type: "string", multiple: true },
      "scenario-id": { type: "string" },
      "scenario-prompt": { type: "string" },
      "ttl-minutes": { type: "string" },
      env: { type: "string", multiple: true },
      wait: { type: "boolean", default: false },
      "timeout-minutes": { type: "string", default: DEFAULT_TIMEOUT_MINUTES }
    }
  });
  const settings = await resolveSettings(context.apiUrlFlag);
  const repo = values.repo ?? originRepository(settings.githubHosts);
  if (!repo)
    throw new InputError(
      "No repository: give --repo owner/name (or run inside a clone with an origin remote)."
    );
  const request = { repo };
  if (values.branch) request.branch = values.branch;
  if (values["pr-url"]) request.pr_url = values["pr-url"];
  if (!request.branch && !request.pr_url) {
    const branch = currentBranch();
    if (!branch)
      throw new InputError("No branch: give --branch or --pr-url (or run inside a clone on a branch).");
    request.branch = branch;
  }
  const twins2 = parseList((values.twins ?? []).join(","));
  if (twins2.length) request.twins = twins2;
  if (values["scenario-id"]) request.scenario_id = values["scenario-id"];
  if (values["scenario-prompt"]) request.scenario_prompt = values["scenario-prompt"];
  if (values["ttl-minutes"]) request.ttl_minutes = parseWholeMinutes("--ttl-minutes", values["ttl-minutes"]);
  const env2 = parseEnv(values.env ?? [], (n) => `--env number ${n}`);
  if (Object.keys(env2).length) request.env = env2;
  const timeoutMs = parsePositiveMinutes("--timeout-minutes", values["timeout-minutes"]) * 6e4;
  const { client } = await authenticatedClient(context);
  let sandbox = await client.createSandbox(request);
  if (values.wait && sandbox.status !== "ready") {
    if (!context.json)
      context.stderr.write(`Created sandbox ${sandbox.sandbox_id}; waiting for it to be ready...
`);
    const progress = new ProgressDisplay(context.stderr);
    try {
      sandbox = await client.waitUntilReady(sandbox.sandbox_id, {
        timeoutMs,
        onProgress: (current, elapsed) => progress.update(current, elapsed)
      });
    } finally {
      progress.done();
    }
  }
  if (context.json) printJson(context, sandbox);
  else print(context, formatSandbox(sandbox));
}
async function get(context, args) {
  const id = onlyId(args, "get");
  const { client } = await authenticatedClient(context);
  const sandbox = await client.getSandbox(id);
  if (context.json) printJson(context, sandbox);
  else print(context, formatSandbox(sandbox));
}
async function list(context, args) {
  const { values } = parseArgs3({
    args,
    options: {
      repo: { type: "string" },
      status: { type: "string" },
      limit: { type: "string" },
      cursor: { type: "string" },
      all: { type: "boolean", default: false }
    }
  });
  if (values.limit !== void 0 && !/^\d+$/.test(values.limit)) {
    throw new InputError(`--limit must be a whole number, not "${values.limit}".`);
  }
  const query = {
    repo: values.repo,
    status: values.status,
    limit: values.limit === void 0 ? void 0 : Number(values.limit)
  };
  const { client } = await authenticatedClient(context);
  if (values.all) {
    const sandboxes = [];
    for await (const sandbox of client.allSandboxes(query)) sandboxes.push(sandbox);
    if (context.json) printJson(context, { sandboxes, next_cursor: null });
    else print(context, formatSandboxList(sandboxes));
    return;
  }
  const page = await client.listSandboxes({ ...query, cursor: values.cursor });
  if (context.json) return printJson(context, page);
  print(context, formatSandboxList(page.sandboxes));
  if (page.next_cursor) print(context, `More: twinbox list --cursor ${page.next_cursor}`);
}
async function logs(context, args) {
  const { values, positionals } = parseArgs3({
    args,
    allowPositionals: true,
    options: { follow: { type: "boolean", short: "f", default: false } }
  });
  const id = onlyId(positionals, "logs");
  const { client } = await authenticatedClient(context);
  if (!values.follow) {
    const text = await client.sandboxLogs(id);
    if (context.json) printJson(context, { sandbox_id: id, logs: text });
    else if (text) context.stdout.write(text);
    return;
  }
  await client.getSandbox(id);
  for await (const chunk of client.followSandboxLogs(id)) {
    if (chunk.gap > 0)
      note(
        context,
        `${chunk.gap} bytes of output were dropped here (Twinbox keeps only the newest part of a log, 1 MiB by default)`
      );
    if (chunk.gap < 0) note(context, "the log starts over here (Twinbox restarted)");
    if (context.json) {
      if (chunk.text || chunk.complete)
        context.stdout.write(
          `${JSON.stringify({ sandbox_id: id, text: chunk.text, start: chunk.start, next: chunk.next, complete: chunk.complete })}
`
        );
    } else if (chunk.text) context.stdout.write(chunk.text);
  }
  const sandbox = await client.getSandbox(id);
  if (!context.json)
    context.stderr.write(`[twinbox] sandbox ${id} ${endedAs(sandbox)}: the log is complete.
`);
}
function note(context, text) {
  context.stderr.write(`[twinbox] ${text}
`);
}
function endedAs(sandbox) {
  switch (sandbox.status) {
    case "failed":
      return `failed (${sandbox.error ?? "no reason given"})`;
    case "expired":
      return "expired";
    case "deleted":
      return "was deleted";
    default:
      return `is ${sandbox.status}`;
  }
}
async function open(context, args) {
  const { values, positionals } = parseArgs3({
    args,
    allowPositionals: true,
    options: { page: { type: "boolean", default: false }, print: { type: "boolean", default: false } }
  });
  const id = onlyId(positionals, "open");
  const { client, settings } = await authenticatedClient(context);
  const sandbox = await client.getSandbox(id);
  const pageUrl = `${settings.apiUrl.replace(/\/+$/, "")}/dashboard/sandboxes/${encodeURIComponent(sandbox.sandbox_id)}`;
  let url = pageUrl;
  if (!values.page) {
    if (sandbox.status !== "ready" || !sandbox.app_url) {
      const why = sandbox.status === "queued" || sandbox.status === "building" ? `has no app yet (status: ${sandbox.status})` : `${endedAs(sandbox)}: its app is gone`;
      throw new CliError(
        `Sandbox ${id} ${why}. Its page: ${pageUrl} (twinbox open --page ${id})`,
        ["queued", "building"].includes(sandbox.status) ? EXIT.rejected : EXIT.sandboxEnded
      );
    }
    url = sandbox.app_url;
  }
  const opener2 = values.print ? void 0 : await openInBrowser(url);
  if (context.json) printJson(context, { url, opened_with: opener2?.command ?? null });
  else print(context, url);
  if (values.print || context.json) return;
  if (opener2?.command) context.stderr.write(`Opened in your browser (${opener2.command}).
`);
  else context.stderr.write(`Could not open a browser (${opener2?.problem}): open the URL above yourself.
`);
}
async function remove(context, args) {
  const id = onlyId(args, "delete");
  const { client } = await authenticatedClient(context);
  const sandbox = await client.deleteSandbox(id);
  if (context.json) printJson(context, sandbox);
  else print(context, `Deleted sandbox ${sandbox.sandbox_id} (status: ${sandbox.status}).`);
}
function onlyId(args, command) {
  const { positionals } = parseArgs3({ args, allowPositionals: true, options: {} });
  if (positionals.length !== 1)
    throw new InputError(`Usage: twinbox ${command} <sandbox-id> (see twinbox ${command} --help)`);
  return positionals[0];
}

// client/cli/twin-commands.ts
import { parseArgs as parseArgs4 } from "node:util";
var DEFAULT_TIMEOUT_MINUTES2 = "5";
var TWIN_SET_ID_VARIABLE = "TWINBOX_TWIN_SET_ID";
var FORMAT_OPTIONS = {
  export: { type: "boolean", default: false },
  dotenv: { type: "boolean", default: false }
};
async function twins(context, args) {
  const [sub, ...rest] = args;
  const run = sub && Object.hasOwn(SUBCOMMANDS, sub) ? SUBCOMMANDS[sub] : void 0;
  if (!run)
    throw new InputError(
      sub ? `Unknown subcommand "twins ${sub}": use create, get, env, list or delete.` : "Usage: twinbox twins <create|get|env|list|delete> [options]"
    );
  await run(context, rest);
}
var SUBCOMMANDS = {
  create: create2,
  get: get2,
  env,
  list: list2,
  delete: remove2
};
async function create2(context, args) {
  const { values } = parseArgs4({
    args,
    options: {
      twins: { type: "string", multiple: true },
      "scenario-id": { type: "string" },
      "scenario-prompt": { type: "string" },
      "ttl-minutes": { type: "string" },
      env: { type: "string", multiple: true },
      "no-wait": { type: "boolean", default: false },
      "timeout-minutes": { type: "string", default: DEFAULT_TIMEOUT_MINUTES2 },
      ...FORMAT_OPTIONS
    }
  });
  const format = formatOf(values);
  if (format && values["no-wait"])
    throw new InputError(`--${format} needs the variables, which exist only once ready: drop --no-wait.`);
  const request = {};
  const names = parseList((values.twins ?? []).join(","));
  if (names.length) request.twins = names;
  if (values["scenario-id"]) request.scenario_id = values["scenario-id"];
  if (values["scenario-prompt"]) request.scenario_prompt = values["scenario-prompt"];
  if (values["ttl-minutes"]) request.ttl_minutes = parseWholeMinutes("--ttl-minutes", values["ttl-minutes"]);
  const extra = parseEnv(values.env ?? [], (n) => `--env number ${n}`);
  if (Object.keys(extra).length) request.env = extra;
  if (!request.twins && !request.scenario_id && !request.scenario_prompt)
    throw new InputError("Name the twins: --twins stripe,github (or --scenario-id / --scenario-prompt).");
  const timeoutMs = parsePositiveMinutes("--timeout-minutes", values["timeout-minutes"]) * 6e4;
  const { client } = await authenticatedClient(context);
  let set = await client.createTwinSet(request);
  if (!values["no-wait"] && set.status !== "ready") {
    if (!context.json) context.stderr.write(`Created twin set ${set.id}; starting its twins...
`);
    set = await client.waitUntilTwinSetReady(set.id, { timeoutMs });
  }
  show(context, set, format);
}
async function get2(context, args) {
  const { client } = await authenticatedClient(context);
  show(context, await client.getTwinSet(onlyId2(args, "get")), void 0);
}
async function env(context, args) {
  const { values, positionals } = parseArgs4({ args, allowPositionals: true, options: FORMAT_OPTIONS });
  const id = onlyId2(positionals, "env");
  const { client } = await authenticatedClient(context);
  const set = await client.getTwinSet(id);
  if (set.status !== "ready")
    throw new InputError(`Twin set ${id} is ${set.status}: only a ready twin set has variables.`);
  show(context, set, formatOf(values) ?? "export");
}
async function list2(context, args) {
  const { values } = parseArgs4({
    args,
    options: { status: { type: "string" }, limit: { type: "string" }, cursor: { type: "string" } }
  });
  if (values.limit !== void 0 && !/^\d+$/.test(values.limit))
    throw new InputError(`--limit must be a whole number, not "${values.limit}".`);
  const { client } = await authenticatedClient(context);
  const page = await client.listTwinSets({
    status: values.status,
    limit: values.limit === void 0 ? void 0 : Number(values.limit),
    cursor: values.cursor
  });
  if (context.json) return printJson(context, page);
  if (!page.twin_sets.length) print(context, "No twin sets.");
  else
    print(
      context,
      table([
        ["ID", "STATUS", "TWINS", "EXPIRES"],
        ...page.twin_sets.map((s) => [s.id, s.status, s.twin_names.join(","), s.expires_at])
      ]).join("\n")
    );
  if (page.next_cursor) print(context, `More: twinbox twins list --cursor ${page.next_cursor}`);
}
async function remove2(context, args) {
  const { client } = await authenticatedClient(context);
  const set = await client.deleteTwinSet(onlyId2(args, "delete"));
  if (context.json) printJson(context, set);
  else print(context, `Deleted twin set ${set.id} (status: ${set.status}).`);
}
function show(context, set, format) {
  if (format) {
    context.stdout.write(variableLines({ ...set.env_vars, [TWIN_SET_ID_VARIABLE]: set.id }, format));
    if (!context.json)
      context.stderr.write(`Twin set ${set.id} is ${set.status}; expires ${set.expires_at}.
`);
    return;
  }
  if (context.json) return printJson(context, set);
  print(context, formatTwinSet(set));
}
function formatTwinSet(set) {
  const rows = [
    ["Twin set:", set.id],
    ["Status:", set.status]
  ];
  if (set.error) rows.push(["Error:", set.error]);
  rows.push(["Expires:", `${set.expires_at} (TTL ${set.ttl_minutes} min)`]);
  const names = Object.keys(set.env_vars).sort();
  if (names.length) rows.push(["Variables:", names.join(", ")]);
  const lines = table(rows);
  const entries = Object.entries(set.twins);
  if (entries.length) {
    lines.push("Twins:", ...table(entries.map(([name, twin]) => [`  ${name}`, twin.base_url])));
    lines.push(`Variables to paste: twinbox twins env ${set.id}`);
  }
  return lines.join("\n");
}
function variableLines(vars, format) {
  return Object.keys(vars).sort().map((name) => {
    const value = vars[name];
    if (format === "export") return `export ${name}='${value.replace(/'/g, `'\\''`)}'
`;
    return `${name}=${dotenvValue(name, value)}
`;
  }).join("");
}
function dotenvValue(name, value) {
  if (/^[A-Za-z0-9_./:@%+,-]*$/.test(value)) return value;
  if (!/['\r\n]/.test(value)) return `'${value}'`;
  if (!/["\\$`\r]/.test(value)) return `"${value.replace(/\n/g, "\\n")}"`;
  throw new InputError(
    `The value of ${name} cannot be written to a .env file so that every reader reads it back (it has both kinds of quotes, or a newline beside a quote, backslash or $): use --export or --json.`
  );
}
function formatOf(values) {
  if (values.export && values.dotenv) throw new InputError("Give --export or --dotenv, not both.");
  return values.export ? "export" : values.dotenv ? "dotenv" : void 0;
}
function onlyId2(args, command) {
  const { positionals } = parseArgs4({ args, allowPositionals: true, options: {} });
  if (positionals.length !== 1)
    throw new InputError(`Usage: twinbox twins ${command} <twin-set-id> (see twinbox twins --help)`);
  return positionals[0];
}

// client/cli/commands.ts
var COMMON_OPTIONS = `Options for every command:
  --json                Machine-readable output on stdout
  --api-url <url>       Twinbox API (else TWINBOX_API_URL, the saved config, http://127.0.0.1:3000)
  --help, -h            Help (twinbox <command> --help, or twinbox help <command>)`;
var COMMANDS = {
  login: {
    run: login,
    synopsis: "login",
    summary: "Sign in with an e-mail code and save an API key",
    help: `Usage: twinbox login [--email <address>] [--code <code> | --send-code] [--name <key name>]

Signs in with a code mailed to the account's address, creates an API key and saves it, with the API
URL, in the config file (~/.config/twinbox/config.json). Each login makes a new key.

Options:
  --email <address>     The account's e-mail (else asked for)
  --send-code           Mail the code and exit, for scripts; finish with --code
  --code <code>         A code mailed earlier: finish without mailing another
  --name <name>         The API key's name (default "twinbox CLI on <host>")`
  },
  logout: {
    run: logout,
    synopsis: "logout",
    summary: "Revoke the saved API key on Twinbox and forget it",
    help: `Usage: twinbox logout

Revokes the API key saved by \`twinbox login\` on the Twinbox it was made on, and removes it from the
config file. The key is forgotten even when Twinbox cannot be reached; the output says whether it was
revoked. TWINBOX_API_KEY is never touched.`
  },
  whoami: {
    run: whoami,
    synopsis: "whoami",
    summary: "Show the signed-in account: e-mail, plan, token, GitHub login",
    help: `Usage: twinbox whoami

Shows the account the API key in use belongs to: its e-mail, plan, the kind of token and where it came
from, and the connected GitHub login.`
  },
  create: {
    run: create,
    synopsis: "create",
    summary: "Create a sandbox for a branch or pull request (--wait for it)",
    help: `Usage: twinbox create [--repo owner/name] [--branch <name> | --pr-url <url>] [options]

Creates a sandbox. Without --repo, the repository is the current clone's origin remote (a GitHub URL:
https, git@github.com:owner/name or ssh://); without --branch and --pr-url, the checked-out branch.

Options:
  --repo owner/name          The GitHub repository
  --branch <name>            The branch to deploy
  --pr-url <url>             A pull request to deploy (its head)
  --twins a,b                Twins to start (github, stripe, slack); repeatable
  --scenario-id <id>         A scenario to seed the twins with
  --scenario-prompt <text>   Seed the twins from a description instead
  --ttl-minutes <n>          Lifetime in minutes (default 60, capped by your plan)
  --env KEY=VALUE            A variable for the app; repeatable
  --wait                     Wait until the sandbox is ready, showing its progress
  --timeout-minutes <n>      How long --wait waits (default 15; fractions allowed)`
  },
  get: {
    run: get,
    synopsis: "get <id>",
    summary: "Show a sandbox",
    help: `Usage: twinbox get <sandbox-id>

Shows a sandbox: status, the error if it failed, app URL, source, expiry, variable names and twins.
Variable values and the twins' admin token are shown only with --json.`
  },
  list: {
    run: list,
    synopsis: "list",
    summary: "List your sandboxes, newest first",
    help: `Usage: twinbox list [--repo owner/name] [--status <status>] [--limit <n>] [--cursor <c> | --all]

Options:
  --repo owner/name     Only this repository's sandboxes
  --status <status>     queued, building, ready, failed, expired or deleted
  --limit <n>           Sandboxes a page (1-100, default 20)
  --cursor <cursor>     The page after the one that printed this cursor
  --all                 Every page`
  },
  logs: {
    run: logs,
    synopsis: "logs <id>",
    summary: "Print a sandbox's install, build and app output (--follow it)",
    help: `Usage: twinbox logs <sandbox-id> [--follow]

Prints what the sandbox's install, build and app printed (the last 1 MiB), as it came.

Options:
  --follow, -f          Keep printing new output as it comes, until the sandbox has ended and its log
                        is complete (or Ctrl-C). With --json, one JSON object a line.`
  },
  open: {
    run: open,
    synopsis: "open <id>",
    summary: "Open a sandbox's app (or --page, its web page) in the browser",
    help: `Usage: twinbox open <sandbox-id> [--page] [--print]

Opens the sandbox's app in the browser (xdg-open, open or start), and prints its URL.

Options:
  --page                The sandbox's page in the web app (<api-url>/dashboard/sandboxes/<id>) instead
  --print               Only print the URL; open nothing`
  },
  delete: {
    run: remove,
    synopsis: "delete <id>",
    summary: "Delete a sandbox now",
    help: `Usage: twinbox delete <sandbox-id>

Ends the sandbox now: its app and twins stop. The record stays, with status deleted.`
  },
  twins: {
    run: twins,
    synopsis: "twins <subcommand>",
    summary: "Twins alone, no repository: for an app on your machine or a CI job",
    help: `Usage: twinbox twins create --twins stripe,github [options]
       twinbox twins get|env|delete <twin-set-id>
       twinbox twins list [--status <status>] [--limit <n>] [--cursor <c>]

A twin set is twins with no repository or app (POST /twin-sets): their public URLs, admin API and
variables, for an app you run yourself. It lives for its TTL, like a sandbox, and counts against the
same plan quota.

  create      Start twins and wait until they are ready (seconds). Shows the set; with --export,
              prints only export NAME='value' lines (eval "$(twinbox twins create ... --export)"),
              with --dotenv a .env file. Either also sets TWINBOX_TWIN_SET_ID.
  get <id>    Show a twin set (variable names only; values with --json)
  env <id>    Print its variables again: export lines, or --dotenv
  list        Your twin sets, newest first
  delete <id> Stop its twins now

Options of create:
  --twins a,b                Twins to start (see GET /twins); repeatable
  --scenario-id <id>         A scenario to seed the twins with (names the twins when --twins is absent)
  --scenario-prompt <text>   Seed the twins from a description instead
  --ttl-minutes <n>          Lifetime in minutes (default 60, capped by your plan)
  --env KEY=VALUE            An extra variable laid over the twins' own; repeatable
  --export | --dotenv        Print the variables as lines to evaluate or to save
  --no-wait                  Return at once (queued, no variables yet)
  --timeout-minutes <n>      How long to wait for ready (default 5; fractions allowed)`
  }
};
function overview() {
  const width = Math.max("help <command>".length, ...Object.values(COMMANDS).map((c) => c.synopsis.length)) + 2;
  const lines = Object.values(COMMANDS).map((c) => `  ${c.synopsis.padEnd(width)}${c.summary}`);
  return `Usage: twinbox <command> [options]

Commands:
${lines.join("\n")}
  ${"help <command>".padEnd(width)}A command's options

${COMMON_OPTIONS}
  --version, -V         The CLI's version

TWINBOX_API_KEY overrides the key saved by \`twinbox login\`. Exit codes: docs/cli.md.`;
}

// client/cli/version.ts
import { readFileSync } from "node:fs";
function cliVersion() {
  if (true) return "0.1.0";
  const manifest = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8"));
  return String(manifest.version);
}

// client/cli.ts
var GLOBAL_OPTIONS = {
  json: { type: "boolean" },
  "api-url": { type: "string" },
  help: { type: "boolean", short: "h" },
  version: { type: "boolean", short: "V" }
};
async function main(argv) {
  const { values, tokens } = parseArgs5({
    args: argv,
    options: GLOBAL_OPTIONS,
    strict: false,
    allowPositionals: true,
    tokens: true
  });
  const rest = [];
  for (const token of tokens) {
    if (token.kind === "option" && Object.hasOwn(GLOBAL_OPTIONS, token.name)) continue;
    if (token.kind === "option") {
      rest.push(token.rawName);
      if (token.value !== void 0) rest.push(token.value);
    } else if (token.kind === "positional") rest.push(token.value);
    else rest.push("--");
  }
  const [name, ...args] = rest;
  const context = {
    stdout: process.stdout,
    stderr: process.stderr,
    json: values.json === true,
    apiUrlFlag: typeof values["api-url"] === "string" ? values["api-url"] : void 0
  };
  if (values.version) {
    if (context.json) context.stdout.write(`${JSON.stringify({ version: cliVersion() })}
`);
    else context.stdout.write(`twinbox ${cliVersion()}
`);
    return EXIT.ok;
  }
  const helpWanted = values.help === true || name === "help";
  const topic = name === "help" ? args[0] : name;
  if (!topic) {
    (helpWanted ? process.stdout : process.stderr).write(`${overview()}
`);
    return helpWanted ? EXIT.ok : EXIT.usage;
  }
  const command = Object.hasOwn(COMMANDS, topic) ? COMMANDS[topic] : void 0;
  if (!command) {
    process.stderr.write(`Unknown command "${topic}".

${overview()}
`);
    return EXIT.usage;
  }
  if (helpWanted) {
    process.stdout.write(`${command.help}

${COMMON_OPTIONS}
`);
    return EXIT.ok;
  }
  try {
    await command.run(context, args);
    return EXIT.ok;
  } catch (error) {
    const code = exitCodeOf(error);
    reportError(context, error, code, topic);
    return code;
  }
}
function reportError(context, error, code, command) {
  const message = error instanceof Error ? error.message : String(error);
  const detail = error instanceof TwinboxApiError ? error.detail : message;
  const hint = code === EXIT.auth && error instanceof TwinboxApiError ? " Run `twinbox login`, or check TWINBOX_API_KEY." : code === EXIT.usage && !(error instanceof TwinboxApiError) && !message.includes("--help") ? ` (see \`twinbox ${command} --help\`)` : "";
  context.stderr.write(`twinbox: ${message}${hint}
`);
  if (!context.json) return;
  const body = { error: detail, exit_code: code };
  if (error instanceof TwinboxApiError) Object.assign(body, { status: error.status, code: error.code });
  if (error instanceof SandboxWaitError)
    Object.assign(body, { reason: error.reason, sandbox: error.sandbox });
  if (error instanceof TwinSetWaitError)
    Object.assign(body, { reason: error.reason, twin_set: error.twinSet });
  context.stdout.write(`${JSON.stringify(body, null, 2)}
`);
}
process.exitCode = await main(process.argv.slice(2));
export {
  main
};
