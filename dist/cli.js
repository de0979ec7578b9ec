#!/usr/bin/env node
import { createRequire as __twinboxCreateRequire } from 'node:module';
const require = __twinboxCreateRequire(import.meta.url);

// client/cli.ts
import { parseArgs as parseArgs3 } from "node:util";

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
  /** The sandbox's install, build and app output, as text. */
  async sandboxLogs(id) {
    const response = await this.request("GET", `/sandboxes/${encodeURIComponent(id)}/logs`);
    return response.text();
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
    const started = Date.now();
    let delay = options.initialDelayMs ?? 500;
    const maxDelay = options.maxDelayMs ?? 5e3;
    let last;
    for (; ; ) {
      options.signal?.throwIfAborted();
      try {
        last = await this.getSandbox(id);
      } catch (error) {
        if (!(error instanceof TwinboxApiError) || !(error.status === 0 || error.status >= 500)) throw error;
      }
      const elapsed = Date.now() - started;
      if (last) {
        options.onProgress?.(last, elapsed);
        if (last.status === "ready") return last;
        if (ENDED.has(last.status)) throw endedError(last);
      }
      const remaining = options.timeoutMs - elapsed;
      if (remaining <= 0) {
        if (!last)
          throw new TwinboxApiError(0, "timeout", `Could not read sandbox ${id} before the timeout.`);
        throw new SandboxWaitError(
          "timeout",
          last,
          `Sandbox ${id} was not ready after ${formatDuration(options.timeoutMs)} (status: ${last.status}).`
        );
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

// client/parse.ts
var InputError = class extends Error {
  name = "InputError";
};
function parseList(text) {
  return text.split(/[,\n]/).map((item) => item.trim()).filter(Boolean);
}
function parseEnv(lines, where) {
  const env = {};
  lines.forEach((line, index) => {
    if (!line.trim() || line.trim().startsWith("#")) return;
    const eq = line.indexOf("=");
    const key = eq === -1 ? "" : line.slice(0, eq).trim();
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) {
      throw new InputError(
        `${where(index + 1)}: expected KEY=VALUE, with KEY of letters, digits and _ not starting with a digit.`
      );
    }
    if (key in env) throw new InputError(`${where(index + 1)}: ${key} is set twice.`);
    env[key] = line.slice(eq + 1);
  });
  return env;
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
  /** Bad command line: unknown command or flag, missing or malformed value. */
  usage: 2,
  /** Not signed in, or the API key / code was not accepted (401). */
  auth: 3,
  /** Twinbox refused the request as asked (400, 403, 409, 413, 415, 429): `detail` says why. */
  rejected: 4,
  /** No such sandbox (404). */
  notFound: 5,
  /** `--wait`: the sandbox failed, expired or was deleted instead of becoming ready. */
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
  if (error instanceof SandboxWaitError) return error.reason === "timeout" ? EXIT.timeout : EXIT.sandboxEnded;
  if (error instanceof TwinboxApiError) {
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
import { chmod, mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
var DEFAULT_API_URL = "https://api.twinbox.dev";
function configPath(env = process.env) {
  const base = env.XDG_CONFIG_HOME?.trim() || join(env.HOME?.trim() || homedir(), ".config");
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
async function resolveSettings(flagApiUrl, env = process.env) {
  const path = configPath(env);
  const stored = await readConfig(path);
  const envKey = env.TWINBOX_API_KEY?.trim();
  return {
    apiUrl: flagApiUrl || env.TWINBOX_API_URL?.trim() || stored.api_url || DEFAULT_API_URL,
    apiKey: envKey || stored.api_key,
    keySource: envKey ? "TWINBOX_API_KEY" : stored.api_key ? "config" : void 0,
    configPath: path
  };
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

// client/cli/login.ts
import { hostname } from "node:os";
import { parseArgs } from "node:util";

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
  const { values } = parseArgs({
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
        print(
          context,
          `Sent a sign-in code to ${email}. Finish with: twinbox login --email ${email} --code <code>`
        );
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

// client/cli/sandbox-commands.ts
import { parseArgs as parseArgs2 } from "node:util";

// client/cli/format.ts
function formatSandbox(sandbox) {
  const rows = [
    ["Sandbox", sandbox.sandbox_id],
    ["Status", sandbox.status],
    ["App", sandbox.app_url ?? "(not deployed yet)"],
    ["Source", `${sandbox.repo} ${target(sandbox)}`],
    ["Expires", `${sandbox.expires_at} (TTL ${sandbox.ttl_minutes} min)`]
  ];
  if (sandbox.error) rows.push(["Error", sandbox.error]);
  const variables = Object.keys(sandbox.env_vars).sort();
  if (variables.length) rows.push(["Variables", variables.join(", ")]);
  const lines = table(rows.map(([label, value]) => [`${label}:`, value]));
  const twins = Object.entries(sandbox.twins);
  if (twins.length) {
    lines.push("Twins:");
    lines.push(...table(twins.map(([name, twin]) => [`  ${name}`, twin.base_url])));
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

// client/cli/git.ts
import { execFileSync } from "node:child_process";
function git(args) {
  try {
    return execFileSync("git", args, { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim() || void 0;
  } catch {
    return void 0;
  }
}
function originRepository() {
  const url = git(["config", "--get", "remote.origin.url"]);
  const match = url && /[/:]([^/:]+)\/([^/]+?)(?:\.git)?\/?$/.exec(url);
  return match ? `${match[1]}/${match[2]}` : void 0;
}
function currentBranch() {
  return git(["symbolic-ref", "--quiet", "--short", "HEAD"]);
}

// client/cli/progress.ts
var ProgressDisplay = class _ProgressDisplay {
  constructor(out = process.stderr) {
    this.out = out;
  }
  out;
  last;
  frame = 0;
  static FRAMES = ["-", "\\", "|", "/"];
  update(sandbox, elapsedMs) {
    const text = `Sandbox ${sandbox.sandbox_id}: ${sandbox.status} (${formatDuration(elapsedMs)})`;
    if (this.out.isTTY) {
      const spinner = _ProgressDisplay.FRAMES[this.frame++ % _ProgressDisplay.FRAMES.length];
      this.out.write(`\r\x1B[2K${spinner} ${text}`);
    } else if (sandbox.status !== this.last) {
      this.out.write(`${text}
`);
    }
    this.last = sandbox.status;
  }
  /** Ends the in-place line so what follows starts on a fresh one. */
  done() {
    if (this.out.isTTY && this.last) this.out.write("\n");
  }
};

// client/cli/sandbox-commands.ts
var DEFAULT_TIMEOUT_MINUTES = "15";
async function create(context, args) {
  const { values } = parseArgs2({
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
  const repo = values.repo ?? originRepository();
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
  const twins = parseList((values.twins ?? []).join(","));
  if (twins.length) request.twins = twins;
  if (values["scenario-id"]) request.scenario_id = values["scenario-id"];
  if (values["scenario-prompt"]) request.scenario_prompt = values["scenario-prompt"];
  if (values["ttl-minutes"]) request.ttl_minutes = parseWholeMinutes("--ttl-minutes", values["ttl-minutes"]);
  const env = parseEnv(values.env ?? [], (n) => `--env number ${n}`);
  if (Object.keys(env).length) request.env = env;
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
  const { values } = parseArgs2({
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
  const id = onlyId(args, "logs");
  const { client } = await authenticatedClient(context);
  const text = await client.sandboxLogs(id);
  if (context.json) printJson(context, { sandbox_id: id, logs: text });
  else if (text) context.stdout.write(text);
}
async function remove(context, args) {
  const id = onlyId(args, "delete");
  const { client } = await authenticatedClient(context);
  const sandbox = await client.deleteSandbox(id);
  if (context.json) printJson(context, sandbox);
  else print(context, `Deleted sandbox ${sandbox.sandbox_id} (status: ${sandbox.status}).`);
}
function onlyId(args, command) {
  const { positionals } = parseArgs2({ args, allowPositionals: true, options: {} });
  if (positionals.length !== 1) throw new InputError(`Usage: twinbox ${command} <sandbox-id>`);
  return positionals[0];
}

// client/cli.ts
var USAGE = `Usage: twinbox <command> [options]

Commands:
  login                 Sign in with an e-mail code and save an API key (--email, --code, --send-code, --name)
  create                Create a sandbox (--repo, --branch | --pr-url, --twins, --scenario-id,
                        --scenario-prompt, --ttl-minutes, --env KEY=VALUE..., --wait, --timeout-minutes)
  get <id>              Show a sandbox
  list                  List your sandboxes (--repo, --status, --limit, --cursor, --all)
  logs <id>             Print a sandbox's install, build and app output
  delete <id>           Delete a sandbox now

Options for every command:
  --json                Machine-readable output on stdout
  --api-url <url>       Twinbox API (else TWINBOX_API_URL, the saved config, https://api.twinbox.dev)
  --help                This text

TWINBOX_API_KEY overrides the key saved by \`twinbox login\`.`;
var COMMANDS = {
  login,
  create,
  get,
  list,
  logs,
  delete: remove
};
async function main(argv) {
  const { values, tokens } = parseArgs3({
    args: argv,
    options: { json: { type: "boolean" }, "api-url": { type: "string" }, help: { type: "boolean" } },
    strict: false,
    allowPositionals: true,
    tokens: true
  });
  const global = /* @__PURE__ */ new Set(["json", "api-url", "help"]);
  const rest = [];
  for (const token of tokens) {
    if (token.kind === "option" && global.has(token.name)) continue;
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
  if (values.help || !name) {
    (values.help ? process.stdout : process.stderr).write(`${USAGE}
`);
    return values.help ? EXIT.ok : EXIT.usage;
  }
  const command = COMMANDS[name];
  if (!command) {
    process.stderr.write(`Unknown command "${name}".

${USAGE}
`);
    return EXIT.usage;
  }
  try {
    await command(context, args);
    return EXIT.ok;
  } catch (error) {
    const code = exitCodeOf(error);
    reportError(context, error, code);
    return code;
  }
}
function reportError(context, error, code) {
  const message = error instanceof Error ? error.message : String(error);
  const detail = error instanceof TwinboxApiError ? error.detail : message;
  const hint = code === EXIT.auth && error instanceof TwinboxApiError ? " Run `twinbox login`, or check TWINBOX_API_KEY." : code === EXIT.usage && !(error instanceof TwinboxApiError) ? " (see `twinbox --help`)" : "";
  context.stderr.write(`twinbox: ${message}${hint}
`);
  if (!context.json) return;
  const body = { error: detail, exit_code: code };
  if (error instanceof TwinboxApiError) Object.assign(body, { status: error.status, code: error.code });
  if (error instanceof SandboxWaitError)
    Object.assign(body, { reason: error.reason, sandbox: error.sandbox });
  context.stdout.write(`${JSON.stringify(body, null, 2)}
`);
}
process.exitCode = await main(process.argv.slice(2));
export {
  main
};
