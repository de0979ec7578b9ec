// The dashboard's live parts. Every page reads without this script; with it, the sandbox page follows
// the status and the log, "Reveal values" fills the variables in place, a twin's request log and the
// timeline grow as things happen. It polls page endpoints of this origin with the session cookie
// (the CSP allows nothing else); the HTML it inserts was rendered and escaped by the server, and log
// text is inserted as text.
'use strict';

const POLL_MS = 1500;
const IDLE_POLL_MS = 4000;

/** GET a page endpoint as JSON; a signed-out session or a gone page stops the caller. */
async function getJson(url) {
  const response = await fetch(url, {
    headers: { accept: 'application/json' },
    credentials: 'same-origin',
    cache: 'no-store',
  });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = new Error(body.detail || `HTTP ${response.status}`);
    error.status = response.status;
    throw error;
  }
  return body;
}

/** Runs `step` again and again, less often while the tab is hidden; stops when it returns false. */
function poll(step, interval = POLL_MS) {
  let timer;
  const next = (ms) => {
    clearTimeout(timer);
    timer = setTimeout(run, document.hidden ? Math.max(ms, 10000) : ms);
  };
  async function run() {
    let again;
    try {
      again = await step();
    } catch (error) {
      // 401 (signed out) and 404 (deleted page) will not get better by asking again.
      if (error.status === 401 || error.status === 404) return showState(error.message);
      again = IDLE_POLL_MS;
    }
    if (again !== false) next(typeof again === 'number' ? again : interval);
  }
  document.addEventListener('visibilitychange', () => {
    if (!document.hidden) next(0);
  });
  next(interval);
}

function showState(text) {
  const state = document.getElementById('live-state');
  if (state) state.textContent = text;
  return false;
}

const ANSI = /\u001b\[[0-9;?]*[ -/]*[@-~]/g;

function appendLog(pre, text) {
  if (!text) return;
  const atBottom = pre.scrollHeight - pre.scrollTop - pre.clientHeight < 40;
  pre.append(document.createTextNode(text.replace(ANSI, '')));
  // A long-running app's log must not grow the page without end.
  if (pre.textContent.length > 400000) pre.textContent = pre.textContent.slice(-300000);
  if (atBottom) pre.scrollTop = pre.scrollHeight;
}

/** The sandbox page: status, details and log, until the sandbox has ended and its log is closed. */
function followSandbox(root) {
  const pre = document.getElementById('log');
  const head = document.getElementById('sandbox-head');
  const status = document.getElementById('sandbox-status');
  const details = document.getElementById('sandbox-details');
  let offset = Number(pre.dataset.offset || 0);
  let updated = root.dataset.updated;
  showState('Following live.');
  poll(async () => {
    const url = `${root.dataset.live}?offset=${offset}&since=${encodeURIComponent(updated)}`;
    const live = await getJson(url);
    if (live.head !== undefined) {
      head.innerHTML = live.head;
      status.innerHTML = live.status_html;
      details.innerHTML = live.details;
      root.dataset.status = live.status;
      bindReveal(details);
    }
    updated = live.updated_at;
    if (live.log.start > offset && offset > 0) appendLog(pre, '\n[… earlier output no longer kept …]\n');
    appendLog(pre, live.log.text);
    offset = live.log.end;
    if (live.log.complete) return showState('The sandbox has ended; its log is complete.');
    return live.log.text ? POLL_MS : live.status === 'ready' ? IDLE_POLL_MS : POLL_MS;
  });
}

/** "Reveal values": fetch the variables with the form's token, show them in place, offer to hide them. */
function bindReveal(scope) {
  for (const form of scope.querySelectorAll('form[data-reveal]')) {
    form.addEventListener('submit', async (event) => {
      event.preventDefault();
      const button = form.querySelector('button');
      const cells = document.querySelectorAll('[data-var]');
      if (form.dataset.shown === 'true') {
        for (const cell of cells) cell.replaceChildren(hiddenMark());
        form.dataset.shown = 'false';
        button.textContent = 'Reveal values';
        return;
      }
      const response = await fetch(form.action, {
        method: 'POST',
        headers: { accept: 'application/json' },
        body: new URLSearchParams(new FormData(form)),
        credentials: 'same-origin',
      });
      const body = await response.json().catch(() => ({}));
      if (!response.ok) return showState(body.detail || `Could not reveal (HTTP ${response.status}).`);
      for (const cell of cells) {
        const code = document.createElement('code');
        code.textContent = body.env_vars[cell.dataset.var] ?? '';
        cell.replaceChildren(code);
      }
      form.dataset.shown = 'true';
      button.textContent = 'Hide values';
    });
  }
}

function hiddenMark() {
  const span = document.createElement('span');
  span.className = 'muted';
  span.textContent = 'hidden';
  return span;
}

/** A twin's request log on its newest page: new requests appear at the top. */
function followRequests(tbody) {
  let last = Number(tbody.dataset.lastId || 0);
  poll(async () => {
    const page = await getJson(`${tbody.dataset.follow}?after=${last}`);
    if (page.last_id < last) last = 0; // the twin restarted: its ids begin again
    if (page.rows.length) {
      tbody.insertAdjacentHTML('afterbegin', page.rows.join(''));
      document.querySelector('#requests .empty')?.remove();
    }
    last = Math.max(last, page.last_id);
    return page.has_more ? 0 : POLL_MS;
  });
}

/**
 * The timeline: entries arrive oldest first; each goes under the entry that caused it (an app request's
 * twin calls, a call's state change). An effect can arrive before its cause (a twin call is logged
 * before the app request that made it ends): it waits at the top level and moves in when the cause comes.
 */
function followTimeline(list) {
  let cursor = list.dataset.cursor;
  const childrenOf = (li) => {
    let ul = li.querySelector(':scope > ul.tl-children');
    if (!ul) {
      ul = document.createElement('ul');
      ul.className = 'tl-children';
      li.append(ul);
    }
    return ul;
  };
  const place = (entry) => {
    if (document.getElementById(`tl-${entry.id}`)) return;
    const holder = document.createElement('template');
    holder.innerHTML = entry.html.trim();
    const li = holder.content.firstElementChild;
    const parent = entry.caused_by && document.getElementById(`tl-${entry.caused_by}`);
    (parent ? childrenOf(parent) : list).append(li);
    for (const orphan of list.querySelectorAll(':scope > li[data-caused-by]')) {
      if (orphan.dataset.causedBy === entry.id) childrenOf(li).append(orphan);
    }
  };
  poll(async () => {
    const page = await getJson(`${list.dataset.follow}?cursor=${encodeURIComponent(cursor)}`);
    for (const entry of page.entries) place(entry);
    if (page.entries.length) document.getElementById('timeline-empty')?.remove();
    const notes = document.getElementById('timeline-notes');
    if (notes) notes.textContent = page.notes.join(' ');
    cursor = page.next_cursor;
    if (page.entries.length >= Number(list.dataset.pageSize || 100)) return 0;
    return list.dataset.ended === 'true' && !page.entries.length ? IDLE_POLL_MS * 3 : POLL_MS;
  });
}

const sandbox = document.getElementById('sandbox');
if (sandbox && document.getElementById('log')) followSandbox(sandbox);
bindReveal(document);
const requests = document.querySelector('tbody[data-follow]');
if (requests) followRequests(requests);
const timeline = document.querySelector('ul#timeline[data-follow]');
if (timeline) followTimeline(timeline);
